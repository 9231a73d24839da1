//! `fslab mkfs IMAGE [--size SIZE] [--block-size N] [--segment-size N] [--force]`.
//!
//! Refuses, unless `--force`, to write over anything that looks like it holds
//! data, checked in this order (the first match names what was found):
//!
//! 1. an ext2/3/4 superblock (magic 0xEF53 at byte 1080);
//! 2. an XFS superblock ("XFSB" at byte 0);
//! 3. a btrfs superblock ("_BHRfS_M" at byte 65600);
//! 4. an fslab superblock (`fslab::lfs::probe`);
//! 5. any non-zero byte in the first 64 KiB.

use crate::size::{human, parse_size};
use clap::Args;
use disk::{BlockDevice, FileDisk};
use fslab::lfs::MkfsOptions;
use std::io;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Arguments of `fslab mkfs`.
#[derive(Args)]
pub struct MkfsArgs {
    /// The image file (created if absent, sparse) or block device.
    image: PathBuf,
    /// Size of the file system, e.g. 64M or 1G [default: the size of an existing file or device].
    #[arg(long, value_parser = parse_size)]
    size: Option<u64>,
    /// Bytes per block: a power of two from 4K to 64K.
    #[arg(long, value_parser = parse_size, default_value = "4096")]
    block_size: u64,
    /// Bytes per segment: a power of two, at least 16 blocks, at most 1/8 of the device [default: 1M, less on small devices].
    #[arg(long, value_parser = parse_size)]
    segment_size: Option<u64>,
    /// Overwrite an existing file system or data.
    #[arg(long)]
    force: bool,
}

const DEFAULT_SEGMENT_SIZE: u64 = 1 << 20;
const MIN_BLOCK_SIZE: u64 = 4 << 10;
const MAX_BLOCK_SIZE: u64 = 64 << 10;
const MIN_SEGMENT_BLOCKS: u64 = 16;
/// A device holds at least this many segments (the cleaner needs room).
const MIN_SEGMENTS: u64 = 8;

/// Makes the file system and prints a one-line summary.
pub fn run(args: &MkfsArgs) -> Result<(), String> {
    let path = args.image.as_path();
    let name = path.display();
    let existing = match std::fs::metadata(path) {
        Ok(meta) => Some(meta),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(format!("{name}: {e}")),
    };
    // The lock (held until the end) keeps a mounted image from being made over.
    let (size, _lock) = match &existing {
        Some(meta) => {
            let kind = meta.file_type();
            if !kind.is_file() && !kind.is_block_device() {
                return Err(format!("{name} is not a regular file or a block device"));
            }
            let lock = crate::image_lock::lock(path).map_err(|e| format!("{name}: {e}"))?;
            let disk = FileDisk::open_read_only(path).map_err(|e| format!("{name}: {e}"))?;
            if !args.force {
                if let Some(what) = existing_contents(&disk).map_err(|e| format!("{name}: {e}"))? {
                    return Err(format!("{name} already holds {what}; use --force to overwrite it"));
                }
            }
            let size = match args.size {
                Some(size) if kind.is_block_device() && size != disk.size() => {
                    return Err(format!(
                        "{name} is a block device of {}; --size cannot change it",
                        human(disk.size())
                    ))
                }
                Some(size) => size,
                None => disk.size(),
            };
            (size, Some(lock))
        }
        None => (args.size.ok_or_else(|| format!("{name} does not exist; give --size to create it"))?, None),
    };
    let options = geometry(size, args.block_size, args.segment_size)?;

    let created = existing.is_none();
    let made = make(path, size, &options);
    if made.is_err() && created {
        // Leave nothing half-made behind.
        let _ = std::fs::remove_file(path);
    }
    made.map_err(|e| format!("{name}: {e}"))?;
    let segments = size / u64::from(options.segment_size);
    println!(
        "fslab: made an LFS on {name}: {}, {}-byte blocks, {} segments of {}",
        human(size),
        options.block_size,
        segments,
        human(options.segment_size.into())
    );
    Ok(())
}

fn make(path: &Path, size: u64, options: &MkfsOptions) -> Result<(), String> {
    let disk = FileDisk::create(path, size).map_err(|e| e.to_string())?;
    // SAFETY: geteuid and getegid cannot fail and touch no memory.
    let creds = unsafe { fslab::ufs::Creds { uid: libc::geteuid(), gid: libc::getegid() } };
    fslab::mkfs_lfs(Arc::new(disk), options, creds).map_err(|e| e.to_string())
}

/// Checks block and segment size against the device size; picks the
/// segment size when none is given (1 MiB, halved until eight fit).
fn geometry(size: u64, block_size: u64, segment_size: Option<u64>) -> Result<MkfsOptions, String> {
    if !block_size.is_power_of_two() || !(MIN_BLOCK_SIZE..=MAX_BLOCK_SIZE).contains(&block_size) {
        return Err(format!("block size must be a power of two from 4 KiB to 64 KiB, not {block_size}"));
    }
    let min_segment = MIN_SEGMENT_BLOCKS * block_size;
    let max_segment = size / MIN_SEGMENTS;
    if max_segment < min_segment {
        return Err(format!(
            "{} is too small: with {block_size}-byte blocks it must hold {MIN_SEGMENTS} segments of \
             {MIN_SEGMENT_BLOCKS} blocks, at least {}",
            human(size),
            human(MIN_SEGMENTS * min_segment)
        ));
    }
    let segment = match segment_size {
        Some(s) => s,
        None => {
            let fitting = 1u64 << max_segment.ilog2();
            DEFAULT_SEGMENT_SIZE.min(fitting).max(min_segment)
        }
    };
    if !segment.is_power_of_two() {
        return Err(format!("segment size must be a power of two, not {segment}"));
    }
    if segment < min_segment {
        return Err(format!(
            "segment size {} is less than {MIN_SEGMENT_BLOCKS} blocks of {block_size} bytes",
            human(segment)
        ));
    }
    if segment > max_segment {
        return Err(format!(
            "segment size {} is more than 1/{MIN_SEGMENTS} of the {} device (at most {})",
            human(segment),
            human(size),
            human(1u64 << max_segment.ilog2())
        ));
    }
    let segment_size =
        u32::try_from(segment).map_err(|_| format!("segment size {} is too large", human(segment)))?;
    Ok(MkfsOptions { block_size: block_size as u32, segment_size })
}

/// What the device already holds, if anything (see the module comment).
fn existing_contents(disk: &FileDisk) -> io::Result<Option<&'static str>> {
    const BTRFS_MAGIC_AT: usize = 65600;
    let magic = |buf: &[u8], at: usize, bytes: &[u8]| buf.get(at..at + bytes.len()) == Some(bytes);
    let len = disk.size().min((BTRFS_MAGIC_AT + 8) as u64) as usize;
    let mut head = vec![0u8; len];
    disk.read_at(0, &mut head)?;
    if magic(&head, 1080, &[0x53, 0xEF]) {
        return Ok(Some("an ext2/3/4 file system"));
    }
    if magic(&head, 0, b"XFSB") {
        return Ok(Some("an XFS file system"));
    }
    if magic(&head, BTRFS_MAGIC_AT, b"_BHRfS_M") {
        return Ok(Some("a btrfs file system"));
    }
    if fslab::lfs::probe(disk) {
        return Ok(Some("an fslab file system"));
    }
    if head.iter().take(64 << 10).any(|&b| b != 0) {
        return Ok(Some("data (non-zero bytes in its first 64 KiB)"));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_segment_is_one_mebibyte_or_an_eighth_of_a_small_device() {
        assert_eq!(geometry(64 << 20, 4096, None).map(|o| o.segment_size), Ok(1 << 20));
        assert_eq!(geometry(4 << 20, 4096, None).map(|o| o.segment_size), Ok(512 << 10));
        assert_eq!(geometry(64 << 20, 65536, None).map(|o| o.segment_size), Ok(1 << 20));
    }

    #[test]
    fn bad_geometry_is_refused() {
        assert!(geometry(64 << 20, 3000, None).is_err());
        assert!(geometry(64 << 20, 2048, None).is_err());
        assert!(geometry(64 << 20, 128 << 10, None).is_err());
        assert!(geometry(64 << 20, 4096, Some(3 << 20)).is_err());
        assert!(geometry(64 << 20, 4096, Some(32 << 10)).is_err());
        assert!(geometry(64 << 20, 4096, Some(16 << 20)).is_err());
        assert!(geometry(256 << 10, 4096, None).is_err());
        assert_eq!(geometry(64 << 20, 4096, Some(8 << 20)).map(|o| o.segment_size), Ok(8 << 20));
    }
}
