//! Sensitivity runs: a TOML file (`fslab bench run --config FILE`) that
//! overrides some parameters of the simulated disk and of the machine
//! model, so that a question such as "what if the seeks were twice as
//! fast" needs no rebuild. Every key is optional; a key not given leaves
//! the experiment's own value.
//!
//! ```toml
//! [disk]                       # every simulated drive of the run
//! rpm = 7200                   # spindle speed
//! seek_scale = 0.5             # every seek time x this (or seek_mean_ms)
//! seek_mean_ms = 6.0           # the mean over random cylinder pairs
//! head_switch_ms = 1.0
//! overhead_scale = 1.0         # controller overhead of every kind x this
//! bus_bytes_per_s = 10_000_000
//! sectors_per_track_scale = 1.5  # recording density, every zone
//! buffer_segments = 1          # 0: no track buffer
//! segment_sectors = 256
//! read_ahead_sectors = 256     # 0: no read-ahead
//! max_transfer_bytes = 65536
//!
//! [disk.log]                   # the log drive (wafs-2), on top of [disk]
//! rpm = 10000
//!
//! [machine]                    # each experiment's machine
//! mips = 22.0
//! copy_bytes_per_s = 24e6
//! buffers = 1600               # buffer cache, one block each
//! charges_directory_scans = false
//! ```
//!
//! `drive.rs` reads and applies the drive's keys, `machine.rs` the
//! machine's. Every error names the file, the key and why, and comes
//! before anything runs. A run records what it changed
//! ([`crate::results::ConfigRecord`]) and the report says so beside its
//! results. `docs/decisions/0016-sensitivity-configuration.md` explains
//! the choices.

mod drive;
mod machine;
#[cfg(test)]
mod tests;

pub use drive::{DiskTuning, DriveTuning};
pub use machine::MachineTuning;

use crate::cpu::Machine;
use crate::results::{ConfigRecord, Override};
use ::disk::DiskModel;
use serde::de::DeserializeOwned;
use std::fmt;
use std::path::{Path, PathBuf};

/// A configuration file's overrides.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Config {
    /// The file, as named on the command line.
    pub path: PathBuf,
    /// `[disk]` and `[disk.log]`.
    pub disk: DiskTuning,
    /// `[machine]`.
    pub machine: MachineTuning,
}

/// Why a configuration file was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The file.
    pub file: PathBuf,
    /// The key at fault, as `section.key` (none for the file as a whole).
    pub key: Option<String>,
    /// Why.
    pub why: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.key {
            Some(key) => write!(f, "{}: {key}: {}", self.file.display(), self.why),
            None => write!(f, "{}: {}", self.file.display(), self.why),
        }
    }
}

impl std::error::Error for ConfigError {}

/// What one experiment's run uses of the parameters a file may set.
#[derive(Debug, Clone)]
pub struct Scope {
    /// The simulated drive it runs on, as the catalogue has it (none on a
    /// memory disk, an image file or a mounted directory).
    pub drive: Option<DiskModel>,
    /// Whether one of its systems puts a journal on a second drive.
    pub log_drive: bool,
    /// Its machine, as the experiment names it.
    pub machine: Machine,
    /// Whether its machine's CPU costs are charged (virtual time with the
    /// CPU model on).
    pub cpu_charged: bool,
    /// Whether its systems mount with the machine's buffer cache (fslab's
    /// own systems, not a mounted directory).
    pub cache_used: bool,
}

impl Config {
    /// Reads and checks `path`.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            file: path.to_path_buf(),
            key: None,
            why: format!("cannot be read: {e}"),
        })?;
        Config::parse(&text, path)
    }

    /// Checks `text`, the contents of `path`.
    pub fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let table: toml::Table = toml::from_str(text).map_err(|e| ConfigError {
            file: path.to_path_buf(),
            key: None,
            why: format!("not valid TOML: {}", e.to_string().trim_end()),
        })?;
        let mut top = Section::new(path, "", table);
        let disk = top.take::<toml::Table>("disk")?;
        let machine = top.take::<toml::Table>("machine")?;
        top.finish("section")?;
        let disk = match disk {
            Some(table) => DiskTuning::read(Section::new(path, "disk", table))?,
            None => DiskTuning::default(),
        };
        let machine = match machine {
            Some(table) => MachineTuning::read(Section::new(path, "machine", table))?,
            None => MachineTuning::default(),
        };
        let config = Config { path: path.to_path_buf(), disk, machine };
        if config.keys().is_empty() {
            return Err(ConfigError {
                file: path.to_path_buf(),
                key: None,
                why: "sets no parameter (give [disk] or [machine] keys; see docs/USAGE.md)".into(),
            });
        }
        Ok(config)
    }

    /// Every key the file sets, as `section.key`, in the order of the
    /// documentation.
    pub fn keys(&self) -> Vec<String> {
        let mut keys = self.disk.keys();
        keys.extend(self.machine.keys());
        keys
    }

    /// `machine` with the file's `[machine]` keys.
    pub fn machine(&self, machine: Machine) -> Machine {
        self.machine.apply(machine)
    }

    /// What a run of `scope` records: the file and each key it uses, with
    /// the experiment's own value.
    pub fn record(&self, scope: &Scope) -> ConfigRecord {
        let mut overrides: Vec<Override> = Vec::new();
        if let Some(drive) = &scope.drive {
            overrides.extend(self.disk.drive.overrides("disk", drive));
            if scope.log_drive {
                let mut data = drive.clone();
                self.disk.drive.apply(&mut data);
                overrides.extend(self.disk.log.overrides("disk.log", &data));
            }
        }
        overrides.extend(self.machine.overrides(scope));
        ConfigRecord { path: self.path.display().to_string(), overrides }
    }
}

/// One table of the file, read key by key so that every error names its
/// key; what is left at the end is unknown.
pub(crate) struct Section<'a> {
    file: &'a Path,
    name: &'static str,
    table: toml::Table,
    known: Vec<&'static str>,
}

impl<'a> Section<'a> {
    fn new(file: &'a Path, name: &'static str, table: toml::Table) -> Section<'a> {
        Section { file, name, table, known: Vec::new() }
    }

    /// `key` as the file names it: `disk.rpm`.
    fn full(&self, key: &str) -> String {
        if self.name.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.name)
        }
    }

    /// An error about `key`.
    pub(crate) fn error(&self, key: &str, why: impl Into<String>) -> ConfigError {
        ConfigError { file: self.file.to_path_buf(), key: Some(self.full(key)), why: why.into() }
    }

    /// The value of `key` as a `T`, if given.
    pub(crate) fn take<T: DeserializeOwned>(&mut self, key: &'static str) -> Result<Option<T>, ConfigError> {
        self.known.push(key);
        match self.table.remove(key) {
            None => Ok(None),
            Some(value) => {
                T::deserialize(value).map(Some).map_err(|e| self.error(key, plain(&e.to_string())))
            }
        }
    }

    /// The number at `key`, if given, refused outside `low..=high`.
    pub(crate) fn number(
        &mut self,
        key: &'static str,
        low: f64,
        high: f64,
        unit: &str,
    ) -> Result<Option<f64>, ConfigError> {
        let value = self.take::<f64>(key)?;
        match value {
            Some(v) if !(low..=high).contains(&v) => {
                Err(self.error(key, format!("{v} is out of range: it must be from {low} to {high}{unit}")))
            }
            _ => Ok(value),
        }
    }

    /// The whole number at `key`, if given, refused outside `low..=high`.
    pub(crate) fn whole<T>(
        &mut self,
        key: &'static str,
        low: T,
        high: T,
        why: &str,
    ) -> Result<Option<T>, ConfigError>
    where
        T: DeserializeOwned + PartialOrd + fmt::Display + Copy,
    {
        let value = self.take::<T>(key)?;
        match value {
            Some(v) if !(low..=high).contains(&v) => {
                Err(self.error(key, format!("{v} is out of range: it must be from {low} to {high}{why}")))
            }
            _ => Ok(value),
        }
    }

    /// Refuses the keys no one asked for.
    pub(crate) fn finish(self, what: &str) -> Result<(), ConfigError> {
        match self.table.keys().next() {
            Some(unknown) => {
                Err(self.error(unknown, format!("unknown {what} (known: {})", self.known.join(", "))))
            }
            None => Ok(()),
        }
    }
}

/// A deserializer's message in the file's words: "a whole number" where
/// serde names a Rust type.
fn plain(message: &str) -> String {
    message
        .trim_end()
        .replace("expected u32", "expected a whole number")
        .replace("expected u64", "expected a whole number")
        .replace("expected f64", "expected a number")
}
