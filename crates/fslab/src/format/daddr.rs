//! Disk addresses: where a block lives on the device, as a typed 64-bit
//! count of the layout's *address units* from byte 0 of the device. LFS
//! addresses whole blocks; FFS addresses fragments, so that a file's last
//! partial block can live in a run of fragments (1993 paper §2.1). What a
//! unit is belongs to the layout, which turns an address into a byte offset
//! with its unit size ([`Daddr::byte_offset`]).
//!
//! Block pointers on disk (in inodes and indirect blocks) are 32 bits wide.
//! An address enters a pointer only through [`Daddr::to_pointer`], which
//! fails instead of dropping high bits; a layout bounds its devices at mkfs
//! and mount so that the failure is a corrupt or foreign image, never a
//! silent wrap.

use std::fmt;
use std::ops::{Add, AddAssign};

/// A disk address in the layout's address units. [`Daddr::NONE`] (0) means
/// "no block": a hole, or a block that has no address yet. Address 0 of
/// every layout holds a superblock, so no block of a file ever lives there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Daddr(u64);

/// A disk address did not fit the 32-bit block pointer it was meant for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PointerOverflow(pub Daddr);

impl fmt::Display for PointerOverflow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "disk address {} does not fit a 32-bit block pointer", self.0)
    }
}

impl Daddr {
    /// The address that means "no block".
    pub const NONE: Daddr = Daddr(0);

    /// The address `units` units from the start of the device.
    pub const fn new(units: u64) -> Daddr {
        Daddr(units)
    }

    /// The address as a count of units.
    pub const fn get(self) -> u64 {
        self.0
    }

    /// Whether this is [`Daddr::NONE`].
    pub const fn is_none(self) -> bool {
        self.0 == 0
    }

    /// Whether this names a block.
    pub const fn is_some(self) -> bool {
        self.0 != 0
    }

    /// The address a 32-bit on-disk block pointer holds.
    pub const fn from_pointer(pointer: u32) -> Daddr {
        Daddr(pointer as u64)
    }

    /// The 32-bit block pointer that stores this address on disk, or an
    /// error if the address is too large for one.
    pub fn to_pointer(self) -> Result<u32, PointerOverflow> {
        u32::try_from(self.0).map_err(|_| PointerOverflow(self))
    }

    /// The byte offset of this address on a device whose address unit is
    /// `unit_bytes` long.
    pub const fn byte_offset(self, unit_bytes: u64) -> u64 {
        self.0 * unit_bytes
    }

    /// The units from `earlier` to this address (0 if `earlier` is not
    /// earlier).
    pub const fn units_after(self, earlier: Daddr) -> u64 {
        self.0.saturating_sub(earlier.0)
    }
}

/// The address `units` further on.
impl Add<u64> for Daddr {
    type Output = Daddr;
    fn add(self, units: u64) -> Daddr {
        Daddr(self.0 + units)
    }
}

impl AddAssign<u64> for Daddr {
    fn add_assign(&mut self, units: u64) {
        self.0 += units;
    }
}

impl From<Daddr> for u64 {
    fn from(addr: Daddr) -> u64 {
        addr.0
    }
}

impl fmt::Display for Daddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pointer_holds_an_address_only_if_it_fits() {
        let fits = Daddr::new(u32::MAX as u64);
        assert_eq!(fits.to_pointer(), Ok(u32::MAX));
        assert_eq!(Daddr::from_pointer(u32::MAX), fits);
        let too_far = fits + 1;
        assert_eq!(too_far.to_pointer(), Err(PointerOverflow(too_far)), "no silent wrap to 0");
        assert!(Daddr::NONE.is_none() && (Daddr::NONE + 1).is_some());
        assert_eq!(Daddr::new(3).byte_offset(1024), 3072);
        assert_eq!(Daddr::new(10).units_after(Daddr::new(4)), 6);
        assert_eq!(Daddr::new(4).units_after(Daddr::new(10)), 0);
    }
}
