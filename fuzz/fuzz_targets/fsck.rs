//! Fuzz target `fsck`: arbitrary bytes, zero-padded or cut to a device of
//! 512 KiB to 4 MiB, checked by fsck, repaired, and checked again (the rules
//! of `fslab_fuzz::fsck_image`). Checksums
//! are left as the bytes have them; `fsck_sealed` recomputes them first.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    fslab_fuzz::fsck_image(fslab_fuzz::image(data, false));
});
