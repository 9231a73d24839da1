//! A repair the power cuts: `fsck --repair` of a copy of a damaged image,
//! with the device gone after some number of the repair's writes, for the
//! tests that require the next fsck to finish what such a repair began.

use disk::{BlockDevice, FaultyDisk, MemDisk};
use std::sync::Arc;

/// Repairs a copy of `image` with the power cut after `writes` of the
/// repair's writes; of the write the cut falls in, the first `torn` bytes
/// land. Returns the copy as the cut left it, and whether the repair
/// finished (clean or corrected, nothing failed) before the cut.
pub fn repair_cut_after(image: &[u8], writes: u64, torn: u64) -> (Arc<MemDisk>, bool) {
    let copy = Arc::new(MemDisk::from_bytes(image.to_vec()));
    let cut: Arc<dyn BlockDevice> = Arc::new(FaultyDisk::new(copy.clone()).cut_after_writes(writes, torn));
    let options = fslab_check::Options { repair: true, ..fslab_check::Options::default() };
    let finished = fslab_check::fsck(cut, &options, &mut |_| {})
        .is_ok_and(|outcome| outcome.failed.is_empty() && outcome.exit_code() <= 1);
    (copy, finished)
}
