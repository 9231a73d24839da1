//! What became of the unflushed writes at a cut, and the image it leaves:
//! [`CrashChoice`] and [`Persist`] name the outcome (writes dropped,
//! reordered, torn at sector granularity); a validated plan of them is
//! applied sector by sector over the durable image. Relies on the event
//! log's writes as (offset, bytes) and on [`SECTOR_SIZE`] being atomic.

use crate::SECTOR_SIZE;
use std::fmt;
use std::io;

/// What became of the unflushed writes at a cut. Writes are named by their
/// index among the unflushed writes (0 = the first after the last barrier).
/// Masks must have exactly one entry per unflushed write (or per sector);
/// [`CrashDisk::crash_image`] refuses anything else.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CrashChoice {
    /// Every unflushed write reached the medium, in recorded order.
    AllPersisted,
    /// No unflushed write reached the medium.
    NonePersisted,
    /// The writes marked `true` reached the medium, in recorded order.
    Subset(Vec<bool>),
    /// The listed writes reached the medium in the listed order (a later
    /// overlapping one may be overwritten by an earlier one); the others were
    /// lost. No index may appear twice.
    Reordered(Vec<usize>),
    /// Power failed during unflushed write `write`: the writes before it
    /// reached the medium in order, only the sectors of `write` marked `true`
    /// did, and the writes after it were lost.
    Torn {
        /// Index of the torn write among the unflushed writes.
        write: usize,
        /// One entry per device sector the write touches.
        sectors: Vec<bool>,
    },
    /// The general case: these writes, each whole or torn, in this order.
    Plan(Vec<Persist>),
}

/// One step of a [`CrashChoice::Plan`]: an unflushed write reaching the
/// medium, whole or torn.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Persist {
    /// Index of the write among the unflushed writes.
    pub write: usize,
    /// `None`: the whole write. `Some(mask)`: only the sectors marked `true`,
    /// one entry per device sector the write touches.
    pub sectors: Option<Vec<bool>>,
}

/// Number of device sectors a write of `len` bytes at `offset` touches.
pub(super) fn sector_count(offset: u64, len: usize) -> usize {
    if len == 0 {
        return 0;
    }
    let first = offset / SECTOR_SIZE;
    let last = (offset + len as u64 - 1) / SECTOR_SIZE;
    (last - first + 1) as usize
}

/// Copies a whole write into the image. Writes were bounds-checked when
/// recorded, against the same size.
pub(super) fn apply_write(image: &mut [u8], offset: u64, data: &[u8]) {
    let start = offset as usize;
    image[start..start + data.len()].copy_from_slice(data);
}

/// Copies only the marked sectors of a write: the part of the write inside
/// each marked device sector, so a sector is all old or all new.
fn apply_sectors(image: &mut [u8], offset: u64, data: &[u8], sectors: &[bool]) {
    let first = offset / SECTOR_SIZE;
    let end = offset + data.len() as u64;
    for (i, _) in sectors.iter().enumerate().filter(|(_, &keep)| keep) {
        let sector_start = (first + i as u64) * SECTOR_SIZE;
        let low = sector_start.max(offset);
        let high = (sector_start + SECTOR_SIZE).min(end);
        if low < high {
            image[low as usize..high as usize]
                .copy_from_slice(&data[(low - offset) as usize..(high - offset) as usize]);
        }
    }
}

/// One write reaching the medium: its index among the unflushed writes and,
/// when torn, the mask of its sectors that made it.
pub(super) type Step<'a> = (usize, Option<&'a [bool]>);

/// Applies a validated plan over the unflushed writes.
pub(super) fn apply_plan(image: &mut [u8], unflushed: &[(u64, &[u8])], plan: &[Step<'_>]) {
    for &(index, sectors) in plan {
        let (offset, data) = unflushed[index];
        match sectors {
            None => apply_write(image, offset, data),
            Some(mask) => apply_sectors(image, offset, data, mask),
        }
    }
}

pub(super) fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, message)
}

impl CrashChoice {
    /// The choice as a list of (unflushed write index, sector mask) in the
    /// order they reach the medium, checked against the unflushed writes.
    pub(super) fn plan(&self, unflushed: &[(u64, &[u8])]) -> io::Result<Vec<Step<'_>>> {
        let n = unflushed.len();
        let check_mask = |what: &str, mask: &[bool], want: usize| {
            if mask.len() == want {
                Ok(())
            } else {
                Err(invalid(format!("{what} has {} entries, want {want}", mask.len())))
            }
        };
        let plan: Vec<Step<'_>> = match self {
            CrashChoice::AllPersisted => (0..n).map(|i| (i, None)).collect(),
            CrashChoice::NonePersisted => Vec::new(),
            CrashChoice::Subset(keep) => {
                check_mask("subset mask", keep, n)?;
                (0..n).filter(|&i| keep[i]).map(|i| (i, None)).collect()
            }
            CrashChoice::Reordered(order) => order.iter().map(|&i| (i, None)).collect(),
            CrashChoice::Torn { write, sectors } => {
                let mut plan: Vec<_> = (0..(*write).min(n)).map(|i| (i, None)).collect();
                plan.push((*write, Some(&sectors[..])));
                plan
            }
            CrashChoice::Plan(steps) => {
                steps.iter().map(|step| (step.write, step.sectors.as_deref())).collect()
            }
        };
        let mut seen = vec![false; n];
        for &(index, sectors) in &plan {
            if index >= n {
                return Err(invalid(format!("write {index} named, but {n} writes are unflushed")));
            }
            if std::mem::replace(&mut seen[index], true) {
                return Err(invalid(format!("write {index} named twice")));
            }
            if let Some(mask) = sectors {
                let (offset, data) = unflushed[index];
                check_mask("sector mask", mask, sector_count(offset, data.len()))?;
            }
        }
        Ok(plan)
    }
}

/// Writes a mask as a string of `0` and `1`.
fn bits(mask: &[bool]) -> String {
    mask.iter().map(|&b| if b { '1' } else { '0' }).collect()
}

impl fmt::Display for CrashChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CrashChoice::AllPersisted => write!(f, "all unflushed writes persisted"),
            CrashChoice::NonePersisted => write!(f, "no unflushed write persisted"),
            CrashChoice::Subset(keep) => write!(f, "persisted subset {}", bits(keep)),
            CrashChoice::Reordered(order) => write!(f, "persisted in order {order:?}"),
            CrashChoice::Torn { write, sectors } => {
                write!(f, "write {write} torn, sectors {}, earlier persisted", bits(sectors))
            }
            CrashChoice::Plan(steps) => {
                write!(f, "plan [")?;
                for (i, step) in steps.iter().enumerate() {
                    let sep = if i == 0 { "" } else { ", " };
                    match &step.sectors {
                        None => write!(f, "{sep}{}", step.write)?,
                        Some(mask) => write!(f, "{sep}{} sectors {}", step.write, bits(mask))?,
                    }
                }
                write!(f, "]")
            }
        }
    }
}
