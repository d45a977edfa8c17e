//! Style checks over `src/`, run as a test (as TigerBeetle's tidy and glommio's style
//! tests do): a file's length, a line's width, the direction of imports along the module
//! map (docs/ARCHITECTURE.md, "Module map"), and comments that tell history.
//!
//! Known violations are listed here, each with its file. The test fails on a violation
//! not listed, and on a listed one that is gone: delete its entry, so the lists only
//! shrink.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// A `src` file longer than this is split by concern (STYLE.md: split before ~800 lines).
const SRC_FILE_LINES_MAX: usize = 800;

/// Foundations every module may import.
const FOUNDATIONS: &[&str] = &["limits", "failpoint", "calendar", "codec", "protocol", "subject", "shard"];

/// For each top-level module of `src/`, the modules it may import besides itself. The map
/// is `server → jetstream → (consumer, stream) → store`: a module imports the layer just
/// below it and the foundations, never one above or a layer further down (which would
/// reach past the layer that owns that concern). `engine` is the embedded API over one
/// shard's streams: a stream-layer module that `jetstream` may use. `fuzzing` is the fuzz
/// targets' harness: it drives any layer, and nothing in `src/` imports it.
fn allowed_imports(module: &str) -> Option<&'static [&'static str]> {
    Some(match module {
        "limits" | "failpoint" | "calendar" | "codec" => &[],
        "protocol" | "subject" | "shard" => &["limits", "failpoint"],
        "store" => &[],
        "stream" | "consumer" => &["store"],
        "engine" => &["consumer", "stream", "store"],
        "jetstream" => &["consumer", "stream", "engine"],
        "server" => &["jetstream"],
        _ => return None,
    })
}

/// Imports against the map that exist today: (file, imported module). Empty: a type a
/// layer's API carries from further down is re-exported by that layer and named through it.
const IMPORT_VIOLATIONS_KNOWN: &[(&str, &str)] = &[];

/// Files with lines wider than `max_width` today, and how many: string literals and
/// comments, which rustfmt leaves to the author.
const WIDE_LINES_KNOWN: &[(&str, usize)] = &[
    ("src/consumer/pull.rs", 1),
    ("src/jetstream/account.rs", 1),
    ("src/jetstream/consumer_api.rs", 1),
    ("src/jetstream/pub_ack.rs", 1),
    ("src/jetstream/responses.rs", 2),
    ("src/jetstream/service/consumer_effects.rs", 1),
    ("src/jetstream/service/consumer_store.rs", 1),
    ("src/jetstream/service/mod.rs", 1),
    ("src/jetstream/stream_info.rs", 1),
    ("src/server/conf_permissions.rs", 1),
    ("src/shard/probe.rs", 2),
    ("src/store/flush.rs", 2),
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file under `src/`, as paths relative to the repository, sorted.
fn src_files() -> Vec<String> {
    fn walk(directory: &Path, out: &mut Vec<PathBuf>) {
        for entry in fs::read_dir(directory).expect("read src directory") {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|extension| extension == "rs") {
                out.push(path);
            }
        }
    }
    let mut paths = Vec::new();
    walk(&root().join("src"), &mut paths);
    let mut files: Vec<String> = paths
        .iter()
        .map(|path| path.strip_prefix(root()).expect("under the root").to_string_lossy().into_owned())
        .collect();
    files.sort();
    files
}

fn read(file: &str) -> String {
    fs::read_to_string(root().join(file)).expect("read source file")
}

/// `max_width` from rustfmt.toml: the width is declared once, for the formatter and here.
fn width_max() -> usize {
    let config = fs::read_to_string(root().join("rustfmt.toml")).expect("rustfmt.toml");
    config
        .lines()
        .find_map(|line| line.strip_prefix("max_width")?.trim().strip_prefix('=')?.trim().parse().ok())
        .expect("rustfmt.toml sets max_width")
}

/// The top-level module a file belongs to (`src/store/log.rs` → `store`); `None` for the
/// crate roots.
fn module_of(file: &str) -> Option<&str> {
    let inside = file.strip_prefix("src/")?;
    let first = inside.split('/').next()?;
    let module = first.strip_suffix(".rs").unwrap_or(first);
    (!matches!(module, "lib" | "main")).then_some(module)
}

/// The code of a line, without a `//` comment (a line comment, or one after the code).
fn code_of(line: &str) -> &str {
    let trimmed = line.trim_start();
    if trimmed.starts_with("//") {
        return "";
    }
    match line.find(" //") {
        Some(at) if !line[..at].contains('"') => &line[..at],
        _ => line,
    }
}

/// The top-level modules a file names through `crate::`. A grouped `crate::{...}` import
/// is reported as the module `{`: write one `use` per module, so each is checked.
fn crate_imports(text: &str) -> BTreeSet<String> {
    let mut modules = BTreeSet::new();
    for line in text.lines() {
        let code = code_of(line);
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            let before = &rest[..at];
            rest = &rest[at + "crate::".len()..];
            if before.ends_with(|c: char| c.is_alphanumeric() || c == '_') {
                continue; // `jetcore_crate::`, not a crate path.
            }
            let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            modules.insert(if name.is_empty() { rest.chars().take(1).collect() } else { name });
        }
    }
    modules
}

#[test]
fn src_files_stay_under_the_length_limit() {
    let long: Vec<String> = src_files()
        .into_iter()
        .filter_map(|file| {
            let lines = read(&file).lines().count();
            (lines > SRC_FILE_LINES_MAX).then(|| format!("{file}: {lines} lines"))
        })
        .collect();
    assert!(long.is_empty(), "split these files by concern (limit {SRC_FILE_LINES_MAX} lines):\n{}", long.join("\n"));
}

#[test]
fn src_lines_stay_within_the_width_limit() {
    let width = width_max();
    let mut found: BTreeMap<String, usize> = BTreeMap::new();
    for file in src_files() {
        let wide = read(&file).lines().filter(|line| line.chars().count() > width).count();
        if wide > 0 {
            found.insert(file, wide);
        }
    }
    let known: BTreeMap<String, usize> =
        WIDE_LINES_KNOWN.iter().map(|(file, count)| (file.to_string(), *count)).collect();
    let mut problems = Vec::new();
    for (file, count) in &found {
        match known.get(file) {
            Some(allowed) if allowed == count => {}
            Some(allowed) => problems.push(format!(
                "{file}: {count} lines over {width} columns, WIDE_LINES_KNOWN says {allowed}: update the entry"
            )),
            None => problems.push(format!("{file}: {count} lines over {width} columns")),
        }
    }
    for file in known.keys().filter(|file| !found.contains_key(*file)) {
        problems.push(format!("{file}: no line over {width} columns now: delete its WIDE_LINES_KNOWN entry"));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn imports_follow_the_module_map() {
    let mut found = BTreeSet::new();
    let mut problems = Vec::new();
    for file in src_files() {
        let Some(module) = module_of(&file) else { continue };
        let text = read(&file);
        for imported in crate_imports(&text) {
            if imported == module {
                continue;
            }
            if imported == "{" {
                problems.push(format!("{file}: grouped `crate::{{...}}` import: one `use` per module"));
                continue;
            }
            let allowed = match allowed_imports(module) {
                // Foundations sit below everything: they import only their own list.
                Some(below) if FOUNDATIONS.contains(&module) => below.contains(&imported.as_str()),
                Some(below) => FOUNDATIONS.contains(&imported.as_str()) || below.contains(&imported.as_str()),
                None if module == "fuzzing" => imported != "fuzzing",
                None => {
                    problems.push(format!("{file}: module `{module}` is not on the module map (tests/tidy.rs)"));
                    continue;
                }
            };
            if !allowed {
                found.insert((file.clone(), imported));
            }
        }
    }
    let known: BTreeSet<(String, String)> =
        IMPORT_VIOLATIONS_KNOWN.iter().map(|(file, module)| (file.to_string(), module.to_string())).collect();
    for (file, imported) in found.difference(&known) {
        problems.push(format!("{file}: imports `crate::{imported}`, against the module map"));
    }
    for (file, imported) in known.difference(&found) {
        problems
            .push(format!("{file}: no longer imports `crate::{imported}`: delete its IMPORT_VIOLATIONS_KNOWN entry"));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Phrases that tell the history of a change rather than why the code is as it is. Such
/// findings belong in perf/*.md or the commit message.
const HISTORY_PHRASES: &[&str] = &["found by fuzzing", "found by the dst", "until 20", "fuzz/regressions"];

#[test]
fn comments_say_why_not_history() {
    let mut problems = Vec::new();
    for file in src_files() {
        for (number, line) in read(&file).lines().enumerate() {
            let Some(comment) = line.trim_start().strip_prefix("//") else { continue };
            let comment = comment.to_lowercase();
            if let Some(phrase) = HISTORY_PHRASES.iter().find(|phrase| comment.contains(*phrase)) {
                problems.push(format!("{file}:{}: comment tells history ({phrase:?})", number + 1));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_checks_see_violations() {
    // Each check must be able to fail.
    assert_eq!(module_of("src/store/log.rs"), Some("store"));
    assert_eq!(module_of("src/engine.rs"), Some("engine"));
    assert_eq!(module_of("src/lib.rs"), None);
    let imports = crate_imports(
        "use crate::jetstream::x;\n// crate::server in a comment\nlet a = crate::store::y(); // crate::shard\n",
    );
    assert_eq!(imports, BTreeSet::from(["jetstream".to_string(), "store".to_string()]));
    assert!(crate_imports("use crate::{store, stream};").contains("{"));
    assert!(!allowed_imports("store").unwrap().contains(&"stream"));
    assert!(width_max() >= 80);
}

#[test]
fn readme_and_architecture_name_every_top_level_module() {
    let readme = read("README.md");
    let architecture = read("docs/ARCHITECTURE.md");
    let mut problems = Vec::new();
    for entry in fs::read_dir(root().join("src")).expect("read src") {
        let name = entry.expect("src entry").file_name().to_string_lossy().into_owned();
        if matches!(name.as_str(), "lib.rs" | "main.rs") {
            continue;
        }
        let module = name.strip_suffix(".rs").unwrap_or(&name);
        if !readme.contains(&format!("`src/{name}`")) {
            problems.push(format!("README.md's layout table does not list `src/{name}`"));
        }
        if !architecture.contains(&format!("| `{module}")) {
            problems.push(format!("docs/ARCHITECTURE.md's module map does not list `{module}`"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
