//! Storage: records, segment files, group commit, recovery, and the file interface.
//!
//! Knows nothing of subjects' meaning or consumers (DESIGN §6). A stream's log is a
//! sequence of segment files holding self-checking records ([`record`]); all file I/O goes
//! through [`Disk`]/[`SegmentFile`] with two implementations, [`DmaDisk`] (O_DIRECT via
//! glommio) and [`SimDisk`] (in memory, with injectable faults).

pub mod blocking_write;
mod dma;
pub mod durable_choice;
pub mod error;
pub mod file;
mod flush;
pub mod flush_stats;
pub mod group;
pub mod log;
pub mod meta_file;
pub mod read_buffer;
pub mod record;
pub mod recovery;
mod reopen;
pub mod scan;
pub mod segment;
mod sim_disk;
mod spare_segment;
pub mod tail_block;
pub mod walker;
pub mod write_buffer;

pub use dma::{DmaDisk, TAIL_BLOCKS_ENV};
pub use error::Error;
pub use file::{Disk, OpenMode, SegmentFile};
pub use flush_stats::{FlushCounts, FlushStats, Pow2Counts};
pub use log::{ForwardRecord, LogConfig, SegmentLog, StoredRecord, SyncPolicy};
pub use record::{Record, RecordKind, StreamId};
pub use recovery::{open_log, LogCheckpoint, LogCut, RecoveryReport};
pub use scan::ScanEvent;
pub use sim_disk::{CrashMode, SilentWrite, SimDisk, SimOp, SIM_SECTOR_BYTES};
