//! `[machine]`: the machine model's figures a sensitivity run may change
//! ([`crate::cpu::Machine`]). The instruction counts per call, lookup and
//! inode change are the same for every machine, so MIPS stands for them:
//! twice the MIPS is half of every one of them.

use super::{ConfigError, Scope, Section};
use crate::cpu::Machine;
use crate::results::Override;
use serde_json::Value;

/// The fewest buffers a cache may have: fslab starts writing at a quarter
/// of its cache but never below `MIN_START_WRITE_BYTES` (64 KB), and 64
/// buffers of the smallest block (4 KB) are the least whose quarter is
/// that.
pub const MIN_BUFFERS: u64 = 4 * fslab::cache::MIN_START_WRITE_BYTES / 4096;

/// The keys of `[machine]`, every one optional.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MachineTuning {
    /// Millions of instructions per second.
    pub mips: Option<f64>,
    /// Bytes per second a user-kernel copy (and a checksum) moves.
    pub copy_bytes_per_s: Option<f64>,
    /// Buffers of the buffer cache, one block each.
    pub buffers: Option<u64>,
    /// Whether directory blocks read by lookups are charged.
    pub charges_directory_scans: Option<bool>,
}

impl MachineTuning {
    /// Reads `[machine]`.
    pub(super) fn read(mut s: Section<'_>) -> Result<MachineTuning, ConfigError> {
        let tuning = MachineTuning {
            mips: s.number("mips", 0.01, 1e6, " MIPS")?,
            copy_bytes_per_s: s.number(
                "copy_bytes_per_s",
                1e5,
                1e12,
                " bytes a second (below 0.1 MB/s a long run's virtual time nears the clock's range)",
            )?,
            buffers: s.whole(
                "buffers",
                MIN_BUFFERS,
                1 << 24,
                " (fewer would hold less than the 64 KB fslab writes at, a quarter of the cache)",
            )?,
            charges_directory_scans: s.take::<bool>("charges_directory_scans")?,
        };
        s.finish("key")?;
        Ok(tuning)
    }

    /// The keys set, as `machine.mips`.
    pub fn keys(&self) -> Vec<String> {
        let set = [
            ("mips", self.mips.is_some()),
            ("copy_bytes_per_s", self.copy_bytes_per_s.is_some()),
            ("buffers", self.buffers.is_some()),
            ("charges_directory_scans", self.charges_directory_scans.is_some()),
        ];
        set.iter().filter(|(_, given)| *given).map(|(key, _)| format!("machine.{key}")).collect()
    }

    /// `machine` as the keys say. Its name stays: the record of the run
    /// says what changed.
    pub fn apply(&self, machine: Machine) -> Machine {
        Machine {
            mips: self.mips.unwrap_or(machine.mips),
            copy_bytes_per_s: self.copy_bytes_per_s.unwrap_or(machine.copy_bytes_per_s),
            buffers: self.buffers.unwrap_or(machine.buffers),
            charges_directory_scans: self.charges_directory_scans.unwrap_or(machine.charges_directory_scans),
            ..machine
        }
    }

    /// Each key set that `scope` uses, with `scope`'s machine's own value.
    pub(super) fn overrides(&self, scope: &Scope) -> Vec<Override> {
        let m = &scope.machine;
        let cpu = scope.cpu_charged;
        let keys = [
            ("mips", cpu, self.mips.map(Value::from), Value::from(m.mips)),
            (
                "copy_bytes_per_s",
                cpu,
                self.copy_bytes_per_s.map(Value::from),
                Value::from(m.copy_bytes_per_s),
            ),
            ("buffers", scope.cache_used, self.buffers.map(Value::from), Value::from(m.buffers)),
            (
                "charges_directory_scans",
                cpu,
                self.charges_directory_scans.map(Value::from),
                Value::from(m.charges_directory_scans),
            ),
        ];
        keys.into_iter()
            .filter(|(_, used, _, _)| *used)
            .filter_map(|(key, _, value, baseline)| {
                value.map(|value| Override { key: format!("machine.{key}"), value, baseline: Some(baseline) })
            })
            .collect()
    }
}
