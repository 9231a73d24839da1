//! Writes the seed corpus: a few small valid images (`fslab_fuzz::seed_images`,
//! and `fslab_fuzz::ffs::seed_images` for the FFS targets) into
//! `corpus/<target>/seed-<name>` for every fuzz target, so that fuzzing
//! starts from valid structure. Run from `fuzz/`: `cargo run --example seed`.
//! A set that cannot be made is reported and the other is still written.

use std::path::Path;

type Images = Vec<(&'static str, Vec<u8>)>;

fn write(targets: &[&str], images: &Images) -> std::io::Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    for target in targets {
        let dir = root.join(target);
        std::fs::create_dir_all(&dir)?;
        for (name, bytes) in images {
            std::fs::write(dir.join(format!("seed-{name}")), bytes)?;
        }
    }
    println!("wrote {} seed images for {}", images.len(), targets.join(", "));
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let sets: [(&[&str], fslab::Result<Images>); 2] = [
        (&["mount", "fsck", "mount_sealed", "fsck_sealed"], fslab_fuzz::seed_images()),
        (&["fsck_ffs", "fsck_ffs_sealed"], fslab_fuzz::ffs::seed_images()),
    ];
    let mut failed = None;
    for (targets, images) in sets {
        match images {
            Ok(images) => write(targets, &images)?,
            Err(e) => {
                eprintln!("seed images for {} cannot be made: {e}", targets.join(", "));
                failed = Some(e);
            }
        }
    }
    failed.map_or(Ok(()), |e| Err(e.into()))
}
