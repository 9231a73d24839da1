//! Fuzz target `fsck_ffs`: arbitrary bytes, zero-padded or cut to a device
//! of 768 KiB to 4 MiB, checked by fsck, repaired, and checked again (the rules
//! of `fslab_fuzz::fsck_image`); an image the repair left clean is mounted
//! as FFS and walked. Checksums are left as the bytes have them;
//! `fsck_ffs_sealed` recomputes them first. Seeded with FFS images.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    fslab_fuzz::ffs::fsck_and_walk(fslab_fuzz::ffs::image(data, false));
});
