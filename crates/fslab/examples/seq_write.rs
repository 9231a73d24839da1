//! Library-level sequential write: how fast the namespace and LFS take data
//! with no FUSE and no kernel in the way. Usage:
//! `cargo run --release -p fslab --example seq_write -- IMAGE [MIB]`
//! (IMAGE is created, 4 GiB, and overwritten).

use fslab::lfs::{Lfs, MkfsOptions, MountOptions};
use fslab::ufs::{Creds, FileSystem};
use std::sync::Arc;
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let path = args.get(1).ok_or("usage: seq_write IMAGE [MIB]")?;
    let mib: u64 = args.get(2).map(|s| s.parse()).transpose()?.unwrap_or(1024);
    let dev: Arc<dyn disk::BlockDevice> = Arc::new(disk::FileDisk::create(path.as_ref(), 4 << 30)?);
    fslab::mkfs_lfs(dev.clone(), &MkfsOptions::default(), Creds::default())?;
    let mut fs = FileSystem::new(Lfs::mount(dev, MountOptions::default())?);
    let file = fs.mknod(fslab::format::ROOT_INO, b"f", 0o100644, 0, Creds::default())?;
    let chunk = vec![0x5au8; 1 << 20];
    let start = Instant::now();
    for i in 0..mib {
        fs.write(file.ino, i << 20, &chunk)?;
    }
    let written = start.elapsed();
    fs.fsync(file.ino, false)?;
    let total = start.elapsed();
    println!(
        "{mib} MiB: write {:.0} MB/s, with fsync {:.0} MB/s",
        (mib << 20) as f64 / written.as_secs_f64() / 1e6,
        (mib << 20) as f64 / total.as_secs_f64() / 1e6
    );
    fs.unmount()?;
    Ok(())
}
