//! Writes the seed corpus: a few small valid images (`fslab_fuzz::seed_images`,
//! and `fslab_fuzz::ffs::seed_images` for the FFS targets) into
//! `corpus/<target>/seed-<name>` for every fuzz target, so that fuzzing
//! starts from valid structure. Run from `fuzz/`: `cargo run --example seed`.

use std::path::Path;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    let images = fslab_fuzz::seed_images()?;
    for target in ["mount", "fsck", "mount_sealed", "fsck_sealed"] {
        let dir = root.join(target);
        std::fs::create_dir_all(&dir)?;
        for (name, bytes) in &images {
            std::fs::write(dir.join(format!("seed-{name}")), bytes)?;
        }
    }
    let ffs_images = fslab_fuzz::ffs::seed_images()?;
    for target in ["fsck_ffs", "fsck_ffs_sealed"] {
        let dir = root.join(target);
        std::fs::create_dir_all(&dir)?;
        for (name, bytes) in &ffs_images {
            std::fs::write(dir.join(format!("seed-{name}")), bytes)?;
        }
    }
    println!(
        "wrote {} seed images for 4 LFS targets and {} for 2 FFS ones under {}",
        images.len(),
        ffs_images.len(),
        root.display()
    );
    Ok(())
}
