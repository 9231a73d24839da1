//! Random damage never makes fsck panic, hang or run away: 200 damaged
//! copies of a populated image (random bytes flipped in one to three of the
//! blocks that hold anything), each checked read-only and then repaired, each
//! run bounded in time. Any exit status is allowed. `FSLAB_FSCK_DAMAGE`
//! changes the number of copies.

mod common;

use common::*;
use disk::{BlockDevice, MemDisk};
use fslab_check::Options;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::sync::Arc;
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(20);

#[test]
fn random_byte_flips_never_panic_or_hang() {
    let (dev, _) = populated();
    let image = dev.snapshot();
    let used: Vec<usize> = image
        .chunks_exact(BS)
        .enumerate()
        .filter(|(_, b)| b.iter().any(|&x| x != 0))
        .map(|(i, _)| i)
        .collect();
    assert!(used.len() > 100, "the image holds data");
    let copies = testkit::harness::env_or("FSLAB_FSCK_DAMAGE", 200);
    let mut rng = SmallRng::seed_from_u64(0xdead_f5c4);
    let mut statuses = [0usize; 9];
    for round in 0..copies {
        let mut bytes = image.clone();
        let blocks = if round % 4 == 0 { 3 } else { 1 };
        let mut damaged = Vec::new();
        for _ in 0..blocks {
            let block = used[rng.gen_range(0..used.len())];
            damaged.push(block);
            for _ in 0..rng.gen_range(1..=8) {
                let at = block * BS + rng.gen_range(0..BS);
                bytes[at] ^= 1 << rng.gen_range(0..8);
            }
        }
        let dev: Arc<MemDisk> = Arc::new(MemDisk::from_bytes(bytes));
        let started = Instant::now();
        let checked = fslab_check::check(dev.as_ref() as &dyn BlockDevice, &Options::default(), &mut |_| {});
        assert!(
            started.elapsed() < LIMIT,
            "round {round} (blocks {damaged:?}): check took {:?}",
            started.elapsed()
        );
        let started = Instant::now();
        let options = Options { repair: true, ..Options::default() };
        let status = match fslab_check::fsck(dev.clone(), &options, &mut |_| {}) {
            Ok(outcome) => outcome.exit_code() as usize,
            Err(_) => 8,
        };
        assert!(
            started.elapsed() < LIMIT,
            "round {round} (blocks {damaged:?}): fsck took {:?}",
            started.elapsed()
        );
        if let Ok(report) = checked {
            assert_eq!(
                report.is_clean(),
                status == 0,
                "round {round}: check and fsck agree on a clean image"
            );
        }
        statuses[status] += 1;
    }
    eprintln!(
        "exit statuses over {copies} damaged copies: 0: {}, 1: {}, 4: {}, 8: {}",
        statuses[0], statuses[1], statuses[4], statuses[8]
    );
    assert!(statuses[4] + statuses[1] > 0, "some damage is found");
}
