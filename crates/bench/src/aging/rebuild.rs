//! An FFS rebuilt from an aged one's free-space map, as the 1995 paper
//! rebuilt its Harvard snapshots (Seltzer et al. 1995, §5.3): "the only
//! meta-data copied from the snapshots of the original file systems was the
//! free space bitmap for each cylinder group. The resulting test file
//! system contained the root directory and no other data, but could only
//! utilize the same free blocks as the original file system."
//!
//! Here the original is an image aged by the 1997 paper's stream
//! ([`age_on_memory`]), whose maps stand in for the unavailable snapshots;
//! [`impose`] writes them over a new, empty FFS of the same geometry: a
//! fragment stays free only where both the aged image and the new one have
//! it free (the new root directory's block stays in use), and every
//! group's counts and summaries follow from its bitmap
//! ([`CylinderGroup::rebuilt`], as fsck rebuilds a group). Inodes and
//! directory counts are the new file system's: new files and directories
//! are placed as on an empty file system, only their blocks are not.
//!
//! [`SavedMaps`] is the same maps as a file (`fslab age --save-bitmaps`,
//! `docs/FORMAT.md`, "Aging free-space bitmaps"), for a tool other than
//! fslab to rebuild the aged free space from.
//!
//! Both functions work on an unmounted image; the mount that follows
//! reads the groups as the truth and the superblock's totals as a hint, so
//! [`impose`] rewrites the totals too.

use super::generate::{Generator, Params};
use super::run::{self, RunOptions, Summary};
use crate::cpu::CpuModel;
use crate::system::FfsParams;
use crate::target::library::{Library, MountEnv};
use crate::target::Target;
use disk::{BlockDevice, MemDisk, VirtualClock};
use fslab::ffs::bitmap::Bitmap;
use fslab::ffs::cg::CylinderGroup;
use fslab::ffs::geometry::Geometry;
use fslab::ffs::layout::{Superblock, Totals};
use fslab::ffs::mkfs::{read_group, read_superblock};
use fslab::ffs::Ffs;
use fslab::time::TimeSource;
use std::io;
use std::sync::Arc;

/// Every group's free-fragment bitmap of an FFS image, and its geometry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FreeMaps {
    /// The image's geometry: the maps fit only an image of the same.
    pub geometry: Geometry,
    /// Group by group, a bit set where a fragment is free.
    pub groups: Vec<Bitmap>,
}

impl FreeMaps {
    /// Share of the data fragments the maps have in use, 0 to 1 (the
    /// 1995 paper's "percentage of total blocks that are allocated",
    /// Fig. 8, counting the minfree reserve as free).
    pub fn utilisation(&self) -> f64 {
        let g = &self.geometry;
        let (mut data, mut free) = (0u64, 0u64);
        for (i, map) in self.groups.iter().enumerate() {
            data += u64::from(g.group_frags(i as u32).saturating_sub(g.data_offset()));
            free += u64::from(map.count_ones());
        }
        if data == 0 {
            return 0.0;
        }
        1.0 - free as f64 / data as f64
    }
}

/// The first eight bytes of a free-space bitmaps file (`docs/FORMAT.md`,
/// "Aging free-space bitmaps").
pub const BITMAPS_MAGIC: [u8; 8] = *b"fslabFSB";
/// The version of that file this code writes and reads.
pub const BITMAPS_VERSION: u32 = 1;
/// Bytes before the first group's record.
const BITMAPS_HEADER: usize = 40;
/// Bytes of a group's record before its bits.
const BITMAPS_GROUP_HEADER: usize = 16;

/// Every cylinder group's free-fragment bitmap as a free-space bitmaps
/// file holds it: what another tool needs to rebuild an aged free-space
/// map, without the rest of the geometry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SavedMaps {
    /// Bytes in a block.
    pub block_size: u32,
    /// Bytes in a fragment.
    pub frag_size: u32,
    /// Fragments in a full group.
    pub frags_per_group: u32,
    /// Fragments in the file system.
    pub total_frags: u64,
    /// Fragments at the start of each group before its first data block
    /// (the group's metadata and inode table; never free).
    pub data_offset: u32,
    /// One per group, in group order.
    pub groups: Vec<SavedGroup>,
}

/// One group's bitmap in a [`SavedMaps`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SavedGroup {
    /// The group's number.
    pub group: u32,
    /// Its first fragment's address in the file system.
    pub first_frag: u64,
    /// One bit per fragment of the group (fewer than a full group's in a
    /// short last group), set where the fragment is free.
    pub free: Bitmap,
}

impl SavedMaps {
    /// The maps of `maps`, each group's cut to the fragments it has.
    pub fn of(maps: &FreeMaps) -> SavedMaps {
        let g = &maps.geometry;
        let groups = maps
            .groups
            .iter()
            .enumerate()
            .map(|(i, map)| {
                let i = i as u32;
                let frags = g.group_frags(i);
                let mut free = Bitmap::new(frags);
                for f in (0..frags).filter(|&f| map.get(f)) {
                    free.set(f);
                }
                SavedGroup { group: i, first_frag: g.group_base(i), free }
            })
            .collect();
        SavedMaps {
            block_size: g.block_size,
            frag_size: g.frag_size,
            frags_per_group: g.fpg,
            total_frags: g.total_frags,
            data_offset: g.data_offset(),
            groups,
        }
    }

    /// The file's bytes (`docs/FORMAT.md`, "Aging free-space bitmaps").
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(
            BITMAPS_HEADER
                + 4
                + self.groups.iter().map(|g| BITMAPS_GROUP_HEADER + g.free.as_bytes().len()).sum::<usize>(),
        );
        out.extend_from_slice(&BITMAPS_MAGIC);
        out.extend_from_slice(&BITMAPS_VERSION.to_le_bytes());
        out.extend_from_slice(&self.block_size.to_le_bytes());
        out.extend_from_slice(&self.frag_size.to_le_bytes());
        out.extend_from_slice(&(self.groups.len() as u32).to_le_bytes());
        out.extend_from_slice(&self.frags_per_group.to_le_bytes());
        out.extend_from_slice(&self.data_offset.to_le_bytes());
        out.extend_from_slice(&self.total_frags.to_le_bytes());
        for g in &self.groups {
            out.extend_from_slice(&g.group.to_le_bytes());
            out.extend_from_slice(&g.free.len().to_le_bytes());
            out.extend_from_slice(&g.first_frag.to_le_bytes());
            out.extend_from_slice(g.free.as_bytes());
        }
        let crc = fslab::format::codec::crc32c(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    /// Reads a file's bytes back; says what is wrong with bytes that are
    /// not such a file, or not whole.
    pub fn decode(bytes: &[u8]) -> Result<SavedMaps, String> {
        if bytes.get(..8) != Some(&BITMAPS_MAGIC[..]) {
            return Err("not a free-space bitmaps file (bad magic)".to_string());
        }
        let u32_at = |at: usize| -> Result<u32, String> {
            let b = bytes.get(at..at + 4).ok_or("the file ends early")?;
            Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        };
        let u64_at = |at: usize| -> Result<u64, String> {
            Ok(u64::from(u32_at(at)?) | (u64::from(u32_at(at + 4)?) << 32))
        };
        let version = u32_at(8)?;
        if version != BITMAPS_VERSION {
            return Err(format!("bitmaps version {version}, this fslab reads {BITMAPS_VERSION}"));
        }
        let Some(body) = bytes.len().checked_sub(4) else { return Err("the file ends early".to_string()) };
        if u32_at(body)? != fslab::format::codec::crc32c(&bytes[..body]) {
            return Err("checksum mismatch: the file is damaged or cut short".to_string());
        }
        let (block_size, frag_size, ncg) = (u32_at(12)?, u32_at(16)?, u32_at(20)?);
        let (frags_per_group, data_offset, total_frags) = (u32_at(24)?, u32_at(28)?, u64_at(32)?);
        let mut at = BITMAPS_HEADER;
        let mut groups = Vec::new();
        for i in 0..ncg {
            let (group, frags, first_frag) = (u32_at(at)?, u32_at(at + 4)?, u64_at(at + 8)?);
            if group != i || frags > frags_per_group {
                return Err(format!("group record {i}: group {group} of {frags} fragments does not follow"));
            }
            at += BITMAPS_GROUP_HEADER;
            let len = (frags as usize).div_ceil(8);
            let free = bytes
                .get(at..body)
                .and_then(|rest| Bitmap::from_bytes(rest, frags))
                .ok_or_else(|| format!("group {i}: its bitmap is cut short or sets bits past its end"))?;
            at += len;
            groups.push(SavedGroup { group, first_frag, free });
        }
        if at != body {
            return Err(format!("{} bytes after the last group", body.saturating_sub(at)));
        }
        Ok(SavedMaps { block_size, frag_size, frags_per_group, total_frags, data_offset, groups })
    }
}

fn fs_error(e: fslab::Error) -> io::Error {
    io::Error::other(e.to_string())
}

/// The free-space maps of the unmounted FFS image on `dev`.
pub fn free_maps(dev: &dyn BlockDevice) -> io::Result<FreeMaps> {
    let sb = read_superblock(dev).map_err(fs_error)?;
    let groups = (0..sb.geometry.ncg)
        .map(|g| read_group(dev, &sb, g).map(|cg| cg.frag_map().clone()).map_err(fs_error))
        .collect::<io::Result<_>>()?;
    Ok(FreeMaps { geometry: sb.geometry, groups })
}

/// Marks in use, on the unmounted FFS image on `dev`, every fragment that
/// `maps` have in use (§5.3's rebuild; see the module comment). Fails,
/// writing nothing, unless the image has the maps' geometry.
pub fn impose(dev: &dyn BlockDevice, maps: &FreeMaps) -> io::Result<()> {
    let sb = read_superblock(dev).map_err(fs_error)?;
    let geo = sb.geometry;
    if geo != maps.geometry || maps.groups.len() != geo.ncg as usize {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("free-space maps of {:?} do not fit an image of {geo:?}", maps.geometry),
        ));
    }
    let mut rebuilt = Vec::with_capacity(geo.ncg as usize);
    for (g, aged) in maps.groups.iter().enumerate() {
        let g = g as u32;
        let cg = read_group(dev, &sb, g).map_err(fs_error)?;
        let mut free = Bitmap::new(geo.fpg);
        for f in 0..geo.fpg {
            if cg.is_frag_free(f) && aged.get(f) {
                free.set(f);
            }
        }
        let cg = CylinderGroup::rebuilt(
            &geo,
            g,
            cg.time,
            cg.inode_map().clone(),
            free,
            cg.counts().directories,
            cg.initialised_inodes(),
            cg.rotors(),
        )
        .map_err(|why| io::Error::other(format!("group {g}: {why}")))?;
        rebuilt.push(cg);
    }
    let mut totals = Totals::default();
    for cg in &rebuilt {
        dev.write_at(geo.byte_offset(geo.cg_addr(cg.index)), &cg.encode(&geo, sb.fs_id))?;
        totals.add(&cg.counts(), 1);
    }
    let sb = Superblock { totals, ..sb };
    dev.write_at(0, &sb.encode())?;
    dev.flush()
}

/// What aging an image gave.
#[derive(Debug, Clone)]
pub struct Aged {
    /// The aged image's free-space maps.
    pub maps: FreeMaps,
    /// The run, day by day.
    pub summary: Summary,
    /// The stream it ran, with the file system's size.
    pub stream: Params,
}

/// An image aged on a memory disk, unmounted.
pub struct AgedImage {
    /// The device, holding the unmounted image.
    pub dev: Arc<MemDisk>,
    /// The run, day by day, and the files live at its end.
    pub summary: Summary,
    /// The stream it ran, with the file system's size.
    pub stream: Params,
}

/// Makes an FFS of `params` on a memory disk of `bytes`, ages it with the
/// stream `stream` describes (its `fs_bytes` replaced by the new file
/// system's, as `fslab age` does) and unmounts it. The mount is
/// asynchronous and on a virtual clock moved to each operation's
/// simulated time (as `fslab age`'s default), with no CPU model: only
/// where the blocks end up matters, not how long aging takes. The
/// asynchronous mount is `fslab age`'s default, so the image is the one
/// `docs/lab/aging.md` measured from the same seed; `params`' own mode is
/// for the benchmarks that follow on the image.
pub fn age_image(params: &FfsParams, bytes: u64, stream: Params) -> io::Result<AgedImage> {
    let mem = Arc::new(MemDisk::new(bytes));
    let dev: Arc<dyn BlockDevice> = mem.clone();
    let clock = Arc::new(VirtualClock::new());
    let env = MountEnv {
        clock: TimeSource::virtual_clock(clock.clone()),
        deterministic: true,
        cache_bytes: 64 << 20,
    };
    let aging = FfsParams { integrity: crate::system::Integrity::Async, ..*params };
    let library = Library::<Ffs>::make(dev, None, None, aging, env)?;
    let mut target = Target::on_virtual_time(Box::new(library), clock.clone(), CpuModel::off());
    let fs_bytes = target.usage()?.total;
    let stream = Params { fs_bytes, ..stream };
    let mut generator = Generator::new(stream);
    let options = RunOptions {
        max_ops: None,
        clock: Some(clock.as_ref()),
        record: None,
        on_op: &mut |_, _| {},
        on_day: &mut |_| {},
        placement: crate::aging::run::Placement::Namespace,
        stop: None,
    };
    let ran = run::run(&mut target, &mut generator, options);
    let finished = target.finish();
    let summary = ran?;
    finished?;
    Ok(AgedImage { dev: mem, summary, stream })
}

/// [`age_image`], keeping only the aged image's free-space maps.
pub fn age_on_memory(params: &FfsParams, bytes: u64, stream: Params) -> io::Result<Aged> {
    let aged = age_image(params, bytes, stream)?;
    Ok(Aged { maps: free_maps(aged.dev.as_ref())?, summary: aged.summary, stream: aged.stream })
}

/// Copies the image on `from` to `to` (a device of at least its size),
/// leaving out the runs of 64 KiB that hold only zeros, which a new
/// device reads as zeros already: the blocks aging never touched, most of
/// an image's inode tables among them.
pub fn copy_image(from: &dyn BlockDevice, to: &dyn BlockDevice) -> io::Result<()> {
    const CHUNK: u64 = 64 << 10;
    let size = from.size();
    if to.size() < size {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("an image of {size} bytes does not fit a device of {}", to.size()),
        ));
    }
    let mut buf = vec![0u8; CHUNK as usize];
    let mut at = 0;
    while at < size {
        let len = (size - at).min(CHUNK) as usize;
        from.read_at(at, &mut buf[..len])?;
        if buf[..len].iter().any(|&b| b != 0) {
            to.write_at(at, &buf[..len])?;
        }
        at += len as u64;
    }
    to.flush()
}
