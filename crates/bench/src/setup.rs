//! The report's setup tables: every simulated disk and every machine model
//! the experiments run on, with the figures the lab takes from them and
//! where those come from, so that a reader can check an assumption without
//! reading the source (`docs/design/simdisk.md` and `crate::cpu` explain
//! how each figure is used).

use crate::experiment::EXPERIMENTS;
use disk::DiskModel;
use std::fmt::Write;

/// The ids of the experiments whose paper disk is `disk`, or whose machine
/// is `machine`.
fn used_by(disk: Option<&str>, machine: Option<&str>) -> String {
    let ids: Vec<&str> = EXPERIMENTS
        .iter()
        .filter(|e| disk.is_some_and(|d| e.disk == d) || machine.is_some_and(|m| e.machine.name == m))
        .map(|e| e.id)
        .collect();
    if ids.is_empty() {
        "-".to_string()
    } else {
        ids.join(", ")
    }
}

/// The disks' table: each drive an experiment names, its geometry, speed
/// and the drive's own summary (which names the paper it stands in for).
fn disks(out: &mut String) {
    let _ = writeln!(
        out,
        "| disk | drive (source) | RPM | cylinders x heads | sectors a track | capacity | mean seek | \
         media rate (outer) | bus | track buffer | used by |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"
    );
    let mut names: Vec<&str> = EXPERIMENTS.iter().map(|e| e.disk).filter(|d| *d != "mem").collect();
    names.sort_unstable();
    names.dedup();
    for name in names {
        let Some(m) = DiskModel::by_name(name) else {
            let _ = writeln!(
                out,
                "| {name} | (not in the catalogue) | | | | | | | | | {} |",
                used_by(Some(name), None)
            );
            continue;
        };
        let spt_low = m.zones.iter().map(|z| z.sectors_per_track).min().unwrap_or(0);
        let spt_high = m.zones.iter().map(|z| z.sectors_per_track).max().unwrap_or(0);
        let spt = if spt_low == spt_high { spt_low.to_string() } else { format!("{spt_low}-{spt_high}") };
        let bus = m.bus_bytes_per_second.map_or("-".to_string(), |b| format!("{:.1} MB/s", b as f64 / 1e6));
        let buffer_kb = u64::from(m.buffer.segments) * u64::from(m.buffer.segment_sectors) * 512 / 1024;
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} x {} | {} | {:.2} GB | {:.1} ms | {:.2} MB/s | {} | {} KB in {} | {} |",
            m.name,
            m.summary,
            m.rpm,
            m.cylinders(),
            m.heads,
            spt,
            m.sectors() as f64 * 512.0 / 1e9,
            m.mean_seek_ms(),
            m.raw_media_rate(0) / 1e6,
            bus,
            buffer_kb,
            m.buffer.segments,
            used_by(Some(name), None)
        );
    }
}

/// The machines' table: the CPU model's constants for each machine an
/// experiment names, and their source.
fn machines(out: &mut String) {
    let _ = writeln!(
        out,
        "| machine | MIPS | copy rate | cache buffers | directory scans charged | source | used by |\n\
         |---|---:|---:|---:|---|---|---|"
    );
    let mut seen: Vec<&str> = Vec::new();
    for e in EXPERIMENTS {
        let m = e.machine;
        if seen.contains(&m.name) {
            continue;
        }
        seen.push(m.name);
        let _ = writeln!(
            out,
            "| {} | {:.1} | {:.1} MB/s | {} | {} | {} | {} |",
            m.name,
            m.mips,
            m.copy_bytes_per_s / 1e6,
            m.buffers,
            if m.charges_directory_scans { "yes" } else { "no" },
            m.source,
            used_by(None, Some(m.name))
        );
    }
}

/// The setup section of the report.
pub fn section(out: &mut String) {
    let _ = writeln!(out, "\n## The setup: disks and machines\n");
    let _ = writeln!(
        out,
        "Each experiment runs on its paper's drive, simulated, and charges its paper's machine's CPU \
         costs to the virtual clock (`--cpu-model off` charges none). Mean seek is over uniformly random \
         pairs of cylinders; the media rate is the outermost zone's. What each figure does is in \
         `docs/design/simdisk.md` and `crates/bench/src/cpu.rs`.\n"
    );
    disks(out);
    let _ = writeln!(out);
    machines(out);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_experiments_disk_and_machine_has_a_row_naming_it() {
        let mut out = String::new();
        section(&mut out);
        for e in EXPERIMENTS {
            let row_of =
                |name: &str| out.lines().find(|l| l.starts_with(&format!("| {name} |"))).map(str::to_owned);
            if e.disk != "mem" {
                let row = row_of(e.disk).unwrap_or_else(|| panic!("no row for disk {}", e.disk));
                assert!(row.contains(e.id) && !row.contains("not in the catalogue"), "{row}");
            }
            let row =
                row_of(e.machine.name).unwrap_or_else(|| panic!("no row for machine {}", e.machine.name));
            assert!(row.contains(e.id) && row.contains(e.machine.source), "{row}");
        }
    }
}
