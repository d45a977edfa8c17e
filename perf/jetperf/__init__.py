"""Helpers of perf/compare: servers, scenarios, runs, report, plots."""
