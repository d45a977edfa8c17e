//! Small metadata files replaced atomically: a `Synced` replace survives a power loss, a
//! `Cached` one survives a crash of the process only (a power loss leaves the previous
//! content, whole), and neither ever leaves a mix of old and new.

#[path = "store_support.rs"]
mod support;

use std::path::Path;

use jetcore::store::meta_file::{self, Durability};
use jetcore::store::{CrashMode, Disk, SimDisk};
use support::run;

const PATH: &str = "/state/consumer.state";

async fn contents(disk: &SimDisk) -> Option<Vec<u8>> {
    meta_file::read(disk, Path::new(PATH)).await.expect("read")
}

#[test]
fn cached_replace_is_lost_by_power_loss_but_not_by_a_process_crash() {
    run(|| async {
        let disk = SimDisk::new();
        disk.create_dir_all(Path::new("/state")).await.expect("mkdir");
        meta_file::write_replace(&disk, Path::new(PATH), b"old", Durability::Synced, "mid_meta_write")
            .await
            .expect("synced write");
        meta_file::write_replace(&disk, Path::new(PATH), b"new", Durability::Cached, "mid_meta_write")
            .await
            .expect("cached write");
        // The process sees (and a restarted process would read) the new content.
        assert_eq!(contents(&disk).await.as_deref(), Some(&b"new"[..]));
        disk.crash(CrashMode::DropUnsynced);
        assert_eq!(
            contents(&disk).await.as_deref(),
            Some(&b"old"[..]),
            "power loss keeps the last synced content whole"
        );
    });
}

#[test]
fn synced_replace_survives_power_loss() {
    run(|| async {
        let disk = SimDisk::new();
        disk.create_dir_all(Path::new("/state")).await.expect("mkdir");
        meta_file::write_replace(&disk, Path::new(PATH), b"first", Durability::Cached, "mid_meta_write")
            .await
            .expect("cached write");
        meta_file::write_replace(&disk, Path::new(PATH), b"second", Durability::Synced, "mid_meta_write")
            .await
            .expect("synced write");
        disk.crash(CrashMode::DropUnsynced);
        assert_eq!(contents(&disk).await.as_deref(), Some(&b"second"[..]));
    });
}
