//! IANA time zones for cron schedules (`Nats-Schedule-Time-Zone`), loaded and computed
//! as Go's `time` package does, because nats-server's cron steps through local wall-clock
//! time with it and jetcore must fire at the same instants:
//!
//! - names as `time.LoadLocation` takes them: `UTC`, `Local` (the host's zone: `$TZ`,
//!   else /etc/localtime, else UTC), or a file under the zone directory (`EST`,
//!   `posixrules` and `right/UTC` too); names with `..` or a leading slash are refused;
//! - files from `$ZONEINFO` (a directory), else the system's directories Go searches
//!   (/usr/share/zoneinfo first), else, as jetcore's own last resort, the PyPI `tzdata`
//!   package of the active virtualenv (`$VIRTUAL_ENV`);
//! - [`Zone::offset_at`] as Go's `Location.lookup` (the TZ string past the last
//!   transition), and [`Zone::from_local`] as Go's `time.Date`, including what it does
//!   with a wall-clock time that a DST switch skips or repeats.
//!
//! Zones are read once per shard thread and kept (a few KiB each): reading a zone file
//! blocks the thread for one small read, on the first schedule that names the zone.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::schedule_time::Civil;
use super::tz_rule::{Span, TzRule};
use super::tzif::{self, LocalType};
use crate::calendar::{civil_from_days, days_from_civil};

const SECONDS_PER_DAY: i64 = 86_400;
/// The directories Go's `time` package reads zones from on Unix, in its order.
const SYSTEM_ZONE_DIRECTORIES: [&str; 4] =
    ["/usr/share/zoneinfo", "/usr/share/lib/zoneinfo", "/usr/lib/locale/TZ", "/etc/zoneinfo"];
/// Zone files are a few KiB; anything far larger is not one.
const ZONE_FILE_BYTES_MAX: u64 = 1 << 20;

/// A loaded zone: its transitions and the rule after them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Zone {
    name: String,
    /// (Unix second, local type), ascending; empty only for UTC.
    transitions: Vec<(i64, usize)>,
    types: Vec<LocalType>,
    rule: Option<TzRule>,
}

thread_local! {
    static LOADED: RefCell<HashMap<String, Arc<Zone>>> = RefCell::new(HashMap::new());
}

impl Zone {
    /// The zone that never changes offset.
    pub fn utc() -> Zone {
        Zone { name: "UTC".to_string(), transitions: Vec::new(), types: Vec::new(), rule: None }
    }

    /// The zone `name` as `time.LoadLocation` finds it (kept for later calls on this
    /// thread); `None` if there is no such zone or no zone database holds it.
    pub fn load(name: &str) -> Option<Arc<Zone>> {
        if let Some(zone) = LOADED.with(|loaded| loaded.borrow().get(name).cloned()) {
            return Some(zone);
        }
        let zone = Arc::new(match name {
            "" | "UTC" => Zone::utc(),
            "Local" => local_zone(),
            _ => Zone::from_file(name, &find_zone_file(name)?)?,
        });
        LOADED.with(|loaded| loaded.borrow_mut().insert(name.to_string(), zone.clone()));
        Some(zone)
    }

    fn from_file(name: &str, path: &Path) -> Option<Zone> {
        let bytes = std::fs::read(path).ok()?;
        Zone::from_tzif(name, &bytes)
    }

    /// A zone from TZif bytes, as Go's `LoadLocationFromTZData`.
    pub fn from_tzif(name: &str, bytes: &[u8]) -> Option<Zone> {
        let data = tzif::parse(bytes)?;
        let mut transitions = data.transitions;
        if transitions.is_empty() {
            // A fixed zone: one transition at the dawn of time, so its TZ string applies.
            transitions.push((i64::MIN, 0));
        }
        let rule = data.footer.as_deref().and_then(TzRule::parse);
        Some(Zone { name: name.to_string(), transitions, types: data.types, rule })
    }

    /// The offset east of UTC at Unix second `unix`, and the span it holds over.
    pub fn offset_at(&self, unix: i64) -> Span {
        if self.types.is_empty() {
            return Span { offset: 0, start: i64::MIN, end: i64::MAX };
        }
        let first_transition = self.transitions[0].0;
        if unix < first_transition {
            let offset = self.types[self.first_type()].offset;
            return Span { offset, start: i64::MIN, end: first_transition };
        }
        // The last transition at or before `unix`.
        let index = self.transitions.partition_point(|(when, _)| *when <= unix) - 1;
        let (start, type_index) = self.transitions[index];
        let end = self.transitions.get(index + 1).map_or(i64::MAX, |(when, _)| *when);
        if index == self.transitions.len() - 1 {
            if let Some(rule) = &self.rule {
                return rule.span_at(start, unix);
            }
        }
        Span { offset: self.types[type_index].offset, start, end }
    }

    /// The type in force before the first transition, as Go picks it: the first type if
    /// no transition uses it, else the standard type before the first transition's.
    fn first_type(&self) -> usize {
        if !self.transitions.iter().any(|(_, index)| *index == 0) {
            return 0;
        }
        let first = self.transitions[0].1;
        if self.types[first].is_daylight {
            if let Some(index) = (0..first).rev().find(|index| !self.types[*index].is_daylight) {
                return index;
            }
        }
        self.types.iter().position(|kind| !kind.is_daylight).unwrap_or(0)
    }

    /// The wall-clock fields at Unix second `unix`.
    pub fn civil_at(&self, unix: i64) -> Civil {
        let local = unix + self.offset_at(unix).offset;
        let (year, month, day) = civil_from_days(local.div_euclid(SECONDS_PER_DAY));
        let of_day = local.rem_euclid(SECONDS_PER_DAY) as u32;
        Civil { year, month, day, hour: of_day / 3600, minute: of_day % 3600 / 60, second: of_day % 60 }
    }

    /// The Unix second of a wall-clock time, as Go's `time.Date`: fields may overflow
    /// (month 13, day 32) and are normalised; a time a switch skips or repeats gets the
    /// offset Go's two lookups give it (a skipped 02:30 in New York is 01:30 EST, a
    /// repeated 01:30 the first, EDT).
    pub fn from_local(&self, year: i64, month: i64, day: i64, hour: i64, minute: i64, second: i64) -> i64 {
        let months = year * 12 + (month - 1);
        let (year, month) = (months.div_euclid(12), months.rem_euclid(12) as u32 + 1);
        let days = days_from_civil(year, month, 1) + day - 1;
        let local = days * SECONDS_PER_DAY + hour * 3600 + minute * 60 + second;
        let guess = self.offset_at(local);
        if guess.offset == 0 {
            return local;
        }
        let unix = local - guess.offset;
        let offset = if unix < guess.start || unix >= guess.end { self.offset_at(unix).offset } else { guess.offset };
        local - offset
    }
}

/// The host's zone as Go's `time.Local`: `$TZ` (empty: UTC; `:name` or a path), else
/// /etc/localtime, else UTC.
fn local_zone() -> Zone {
    let named = |zone: Option<Zone>| zone.map(|zone| Zone { name: "Local".to_string(), ..zone });
    let loaded = match std::env::var("TZ") {
        Err(_) => named(Zone::from_file("Local", Path::new("/etc/localtime"))),
        Ok(value) => {
            let value = value.strip_prefix(':').unwrap_or(&value);
            match value {
                "" | "UTC" => None,
                path if path.starts_with('/') => named(Zone::from_file("Local", Path::new(path))),
                name => named(find_zone_file(name).and_then(|path| Zone::from_file(name, &path))),
            }
        }
    };
    loaded.unwrap_or_else(|| Zone { name: "Local".to_string(), ..Zone::utc() })
}

/// The file of zone `name`: `$ZONEINFO`, the system directories, then the `tzdata`
/// Python package of `$VIRTUAL_ENV`. Names Go refuses are refused here.
fn find_zone_file(name: &str) -> Option<PathBuf> {
    if name.contains("..") || name.starts_with('/') || name.starts_with('\\') {
        return None;
    }
    let mut directories: Vec<PathBuf> = Vec::new();
    if let Some(zoneinfo) = std::env::var_os("ZONEINFO").filter(|value| !value.is_empty()) {
        directories.push(zoneinfo.into());
    }
    directories.extend(SYSTEM_ZONE_DIRECTORIES.iter().map(PathBuf::from));
    if let Some(venv) = std::env::var_os("VIRTUAL_ENV") {
        directories.extend(python_tzdata_directories(Path::new(&venv)));
    }
    directories
        .into_iter()
        .map(|directory| directory.join(name))
        .find(|path| std::fs::metadata(path).is_ok_and(|meta| meta.is_file() && meta.len() <= ZONE_FILE_BYTES_MAX))
}

/// `<venv>/lib/python3.*/site-packages/tzdata/zoneinfo`, for each Python the venv has.
pub fn python_tzdata_directories(venv: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(venv.join("lib")) else { return Vec::new() };
    let mut found: Vec<PathBuf> = entries
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().starts_with("python"))
        .map(|entry| entry.path().join("site-packages/tzdata/zoneinfo"))
        .filter(|path| path.is_dir())
        .collect();
    found.sort();
    found
}

/// For tests: zone `name` from `$ZONEINFO`, /usr/share/zoneinfo or the repository's
/// `.venv` (where `tools/test` installs the `tzdata` package). Panics without one, so a
/// machine without a zone database fails the tests that need one instead of skipping them.
#[cfg(test)]
pub fn test_zone(name: &str) -> Zone {
    let mut directories: Vec<PathBuf> = std::env::var_os("ZONEINFO").map(PathBuf::from).into_iter().collect();
    directories.push(PathBuf::from("/usr/share/zoneinfo"));
    directories.extend(python_tzdata_directories(&Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv")));
    let path = directories.iter().map(|directory| directory.join(name)).find(|path| path.is_file());
    let path = path.unwrap_or_else(|| panic!("no zone file for {name}: install tzdata (tools/test does, into .venv)"));
    Zone::from_file(name, &path).unwrap_or_else(|| panic!("{} is not a TZif file", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_is_built_in_and_names_go_refuses_are_refused() {
        let utc = Zone::load("UTC").expect("built in");
        assert_eq!(utc.offset_at(1_800_000_000).offset, 0);
        assert_eq!(utc.from_local(2026, 14, 32, 25, 0, 0), utc.from_local(2027, 3, 5, 1, 0, 0));
        for refused in ["../zoneinfo/UTC", "/UTC", "Nope/Zone", "Europe/../UTC"] {
            assert!(Zone::load(refused).is_none(), "{refused}");
        }
    }
}
