//! Files an older store kept beside a stream's metadata. The layer that wrote one reads it
//! once, moves what it held into the metadata's extension (`Stream::set_extension`), then
//! removes it.

use std::path::Path;

use super::stream::Stream;
use crate::limits::METADATA_FILE_BYTES_MAX;
use crate::store::{meta_file, Disk, OpenMode};

impl Stream {
    /// The whole of file `name` in the stream's directory, written without `meta_file`'s
    /// frame; `None` when it does not exist.
    pub async fn read_legacy_file(&self, name: &str) -> Result<Option<Vec<u8>>, String> {
        read_unframed(&*self.context.disk, &self.dir.join(name)).await
    }

    /// Removes file `name` from the stream's directory.
    pub async fn remove_legacy_file(&self, name: &str) -> std::io::Result<()> {
        self.context.disk.remove_file(&self.dir.join(name)).await
    }
}

async fn read_unframed(disk: &dyn Disk, path: &Path) -> Result<Option<Vec<u8>>, String> {
    let file = match disk.open(path, OpenMode::Existing).await {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(error.to_string()),
    };
    let size = file.size().await.map_err(|error| error.to_string())?;
    if size as usize > METADATA_FILE_BYTES_MAX {
        return Err("file too large".to_string());
    }
    let mut bytes =
        file.read_at_aligned(0, meta_file::align_up(size) as usize).await.map_err(|error| error.to_string())?;
    file.close().await.map_err(|error| error.to_string())?;
    bytes.truncate(size as usize);
    Ok(Some(bytes))
}
