"""What machine a result was measured on."""

from __future__ import annotations

import os
import platform
import subprocess


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def git(*arguments: str) -> str:
    try:
        return subprocess.run(["git", *arguments], capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


def describe() -> dict:
    memory_kib = 0
    try:
        with open("/proc/meminfo") as meminfo:
            memory_kib = int(meminfo.readline().split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return {
        "nproc": os.cpu_count(),
        "cpu": cpu_model(),
        "kernel": platform.release(),
        "memory_gib": round(memory_kib / 1024 / 1024, 1),
        "load_average": os.getloadavg(),
        "commit": git("rev-parse", "--short", "HEAD") or "unknown",
        "dirty": bool(git("status", "--porcelain", "--untracked-files=no")),
    }
