//! `fslab bench`: the lab's command line. `list` shows the experiments,
//! systems, disks and claims; `run` runs experiments and writes results,
//! plots and the report; `report` writes the report again from saved
//! results. The work is the `fslab-bench` crate's.

use clap::{Args, Subcommand, ValueEnum};
use fslab_bench::claims::{claim_verdict, evaluate, Verdict, CALIBRATED, CLAIMS};
use fslab_bench::config::Config;
use fslab_bench::cpu::Charges;
use fslab_bench::device::Medium;
use fslab_bench::experiment::{self, Experiment, EXPERIMENTS};
use fslab_bench::results::Results;
use fslab_bench::runner::{self, Place, RealDir, Settings};
use fslab_bench::system::SYSTEMS;
use fslab_bench::{report, system};
use std::path::{Path, PathBuf};

/// Examples in `fslab bench --help`.
pub const EXAMPLES: &str = "Examples:
  fslab bench list                                experiments, systems, disks and claims
  fslab bench run all --quick                     every experiment, small, on simulated disks
  fslab bench run s93-bandwidth --seeds 1..5      one experiment on five seeds: medians, ranges, unstable verdicts
  fslab bench run s95-large-file --config docs/lab/examples/sensitivity.toml --out /tmp/half-seek
                                                  a sensitivity run: disk and machine parameters from a file
  fslab bench report lab-results                  the report again from saved results
  fslab bench merge --out lab-results /tmp/seeds-1-3 /tmp/seeds-4-5
                                                  seeds run in two processes, gathered into one";

/// Arguments of `fslab bench`.
#[derive(Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    command: BenchCommand,
}

#[derive(Subcommand)]
enum BenchCommand {
    /// List the experiments, the systems they compare, the disks and the claims.
    List,
    /// Run experiments (ids, or `all`) and write results.json, results.csv, plots and report.md.
    Run(RunArgs),
    /// Write report.md and the plots again from DIR/results.json.
    Report {
        /// The directory a run wrote.
        dir: PathBuf,
    },
    /// Gather seeds run apart (several processes at once, or several machines, of one
    /// build) into one results directory, as if one run had made them all; its other
    /// experiments are kept, and an experiment gathered replaces its old seeds.
    /// Refuses a seed found twice and runs of an experiment made differently (disk,
    /// clock, CPU model, --quick, --config).
    Merge {
        /// The results directory to write (results.json, results.csv, plots, report.md).
        #[arg(long)]
        out: PathBuf,
        /// Directories `fslab bench run` wrote.
        #[arg(required = true)]
        from: Vec<PathBuf>,
    },
}

/// `--cpu-model`'s values (`fslab_bench::cpu::Charges`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum CpuModelArg {
    /// The paper machine's costs of fslab's work, its whole-block checksums included
    On,
    /// No CPU costs: the disk alone
    Off,
    /// As on, but checksums as the papers' systems computed them: LFS one word a block and its
    /// summary, FFS none (4.4BSD)
    Paper,
}

impl CpuModelArg {
    fn charges(self) -> Charges {
        match self {
            CpuModelArg::On => Charges::On,
            CpuModelArg::Off => Charges::Off,
            CpuModelArg::Paper => Charges::Paper,
        }
    }
}

#[derive(Args)]
struct RunArgs {
    /// Experiments to run (see `fslab bench list`), or `all`.
    #[arg(required = true)]
    experiments: Vec<String>,
    /// Run every experiment on this disk instead of its paper's: a simulated drive
    /// (hp97560, dsp3105, …; virtual time), `mem` (a memory disk) or `file` (an image
    /// file in --scratch), both on wall time.
    #[arg(long, value_name = "MODEL", conflicts_with = "real")]
    disk: Option<String>,
    /// Run the workloads in these mounted directories (NAME=DIR or DIR) instead of
    /// fslab's systems: an fslab mount, ext4, xfs, fuse2fs… (wall time).
    #[arg(long, value_name = "DIR", num_args = 1..)]
    real: Vec<String>,
    /// Seed of the disks' rotational phase and the workloads' random choices.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Run each experiment once per seed: a range `1..5` (both ends included), a list
    /// `1,2,3`, or both (`1..3,7`). The report shows each value as the median and its
    /// range over the seeds, and calls a check *unstable* when the seeds disagree on
    /// its verdict. An experiment run again replaces all its old seeds.
    #[arg(long, value_name = "SEEDS", conflicts_with = "seed")]
    seeds: Option<String>,
    /// Where results, plots and the report go; results already there are kept
    /// unless the same experiment is run again.
    #[arg(long, default_value = "lab-results")]
    out: PathBuf,
    /// Which CPU costs of the paper's machine to charge to the virtual clock (off: the disk
    /// alone; paper: the papers' checksums instead of fslab's). results.json and the report
    /// record which.
    #[arg(long, value_enum, default_value = "on", value_name = "on|off|paper")]
    cpu_model: CpuModelArg,
    /// The small configuration of every workload (seconds, for a smoke run).
    #[arg(long)]
    quick: bool,
    /// Run only these systems of each experiment (comma-separated names from
    /// `fslab bench list`).
    #[arg(long, value_delimiter = ',', value_name = "NAME,…")]
    systems: Vec<String>,
    /// Where `--disk file` puts its image files.
    #[arg(long, default_value = "/var/tmp")]
    scratch: PathBuf,
    /// A sensitivity run: a TOML file whose keys replace the simulated disk's and the
    /// machine's parameters (every key optional; see docs/USAGE.md), e.g.
    ///
    ///   [disk]
    ///   seek_scale = 0.5      # every seek takes half the time
    ///   rpm = 7200
    ///   [machine]
    ///   mips = 50.0
    ///
    /// [disk]: rpm, seek_scale or seek_mean_ms, head_switch_ms, overhead_scale,
    /// bus_bytes_per_s, sectors_per_track_scale, buffer_segments, segment_sectors,
    /// read_ahead_sectors, max_transfer_bytes; [disk.log] the same for a journal's
    /// second drive; [machine]: mips, copy_bytes_per_s, buffers,
    /// charges_directory_scans. results.json records the file and what it changed,
    /// and the report marks every result of such a run.
    #[arg(long, value_name = "FILE", conflicts_with = "real", verbatim_doc_comment)]
    config: Option<PathBuf>,
}

/// Runs `fslab bench`.
pub fn run(args: &BenchArgs) -> Result<(), String> {
    match &args.command {
        BenchCommand::List => list(),
        BenchCommand::Run(run) => run_experiments(run),
        BenchCommand::Report { dir } => {
            let results = Results::load(dir).map_err(|e| e.to_string())?;
            write_report(&results, dir)
        }
        BenchCommand::Merge { out, from } => merge(out, from),
    }
}

/// The results already in `out` (made if missing), which a run or a merge
/// adds to: none if it holds no `results.json`.
fn results_in(out: &Path) -> Result<Results, String> {
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    if out.join("results.json").exists() {
        Results::load(out).map_err(|e| format!("{e} (remove it or choose another --out)"))
    } else {
        Ok(Results::default())
    }
}

/// `fslab bench merge`: the seeds in `from` gathered (each checked against
/// the others), then merged into `out`'s results.
fn merge(out: &Path, from: &[PathBuf]) -> Result<(), String> {
    let mut gathered = Results::default();
    for dir in from {
        let results = Results::load(dir).map_err(|e| e.to_string())?;
        gathered.gather(results).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let mut results = results_in(out)?;
    let experiments: std::collections::BTreeSet<&str> =
        gathered.runs.iter().map(|r| r.experiment.as_str()).collect();
    for experiment in experiments {
        let seeds: Vec<String> = gathered.seeds(experiment).iter().map(u64::to_string).collect();
        say!("fslab: bench: {experiment}: seeds {}", seeds.join(", "));
    }
    results.merge(gathered);
    results.save(out).map_err(|e| format!("{}: {e}", out.display()))?;
    write_report(&results, out)
}

fn list() -> Result<(), String> {
    outln!("Experiments (fslab bench run ID… | all):")?;
    for e in EXPERIMENTS {
        outln!("  {:<16} {} ({}); disk {}", e.id, e.title, e.source, e.disk)?;
        let systems: Vec<String> = e
            .systems
            .iter()
            .map(|s| {
                let later =
                    system::by_name(s).and_then(|s| s.not_yet()).or_else(|| experiment::missing_feature(s));
                if later.is_some() {
                    format!("{s} (not yet)")
                } else {
                    s.to_string()
                }
            })
            .collect();
        outln!("  {:<16} systems: {}", "", systems.join(", "))?;
    }
    outln!("\nSystems:")?;
    let width = SYSTEMS.iter().map(|s| s.name.len()).max().unwrap_or(0);
    for s in SYSTEMS {
        let later = s.not_yet().map(|w| format!(" [not yet: {w}]")).unwrap_or_default();
        outln!("  {:<width$} {}{later}", s.name, s.about)?;
    }
    outln!("\nDisks (--disk): {}, mem, file", disk::DiskModel::names().join(", "))?;
    outln!("\nClaims (reproduction targets):")?;
    for c in CLAIMS {
        outln!("  {:>2}. {}", c.number, c.statement)?;
    }
    Ok(())
}

fn experiments(names: &[String]) -> Result<Vec<&'static Experiment>, String> {
    if names.iter().any(|n| n == "all") {
        return Ok(EXPERIMENTS.iter().collect());
    }
    names
        .iter()
        .map(|n| {
            experiment::by_id(n).ok_or_else(|| {
                let ids: Vec<&str> = EXPERIMENTS.iter().map(|e| e.id).collect();
                format!("unknown experiment {n} (known: {}, all)", ids.join(", "))
            })
        })
        .collect()
}

fn place(args: &RunArgs) -> Result<Place, String> {
    if !args.real.is_empty() {
        let dirs: Vec<RealDir> = args.real.iter().map(|a| RealDir::parse(a)).collect();
        for d in &dirs {
            if !d.path.is_dir() {
                return Err(format!("{}: not a directory", d.path.display()));
            }
        }
        return Ok(Place::Real(dirs));
    }
    match args.disk.as_deref() {
        None => Ok(Place::Paper),
        Some("mem") => Ok(Place::Medium(Medium::Memory)),
        Some("file") => {
            if !args.scratch.is_dir() {
                return Err(format!("{}: not a directory (--scratch)", args.scratch.display()));
            }
            Ok(Place::Medium(Medium::Image(args.scratch.clone())))
        }
        Some(model) => {
            if disk::DiskModel::by_name(model).is_none() {
                return Err(format!(
                    "unknown disk {model} (known: {}, mem, file)",
                    disk::DiskModel::names().join(", ")
                ));
            }
            // The runner gives the drive each run's own seed and the
            // configuration file's changes.
            Ok(Place::Medium(Medium::Sim {
                model: model.to_string(),
                seed: args.seed,
                tuning: Default::default(),
            }))
        }
    }
}

fn run_experiments(args: &RunArgs) -> Result<(), String> {
    let chosen = experiments(&args.experiments)?;
    let seeds = match &args.seeds {
        Some(text) => fslab_bench::seeds::parse(text).map_err(|e| format!("--seeds: {e}"))?,
        None => vec![args.seed],
    };
    let config = match &args.config {
        Some(path) => Some(Config::load(path).map_err(|e| e.to_string())?),
        None => None,
    };
    let settings = Settings {
        seed: args.seed,
        quick: args.quick,
        cpu_model: args.cpu_model.charges(),
        place: place(args)?,
        scratch: args.scratch.clone(),
        progress: true,
        drop_kernel_caches: true,
        only_systems: (!args.systems.is_empty()).then(|| args.systems.clone()),
        config,
    };
    for name in &args.systems {
        if system::by_name(name).is_none() && experiment::missing_feature(name).is_none() {
            return Err(format!("unknown system {name} (see fslab bench list)"));
        }
    }
    check_config_applies(&chosen, &settings)?;
    let mut results = results_in(&args.out)?;
    let fresh = runner::run_seeds(&chosen, &settings, &seeds);
    let failed: Vec<String> = fresh
        .skipped
        .iter()
        .filter(|s| !s.not_yet)
        .map(|s| format!("{} {}: {}", s.experiment, s.system, s.reason))
        .collect();
    results.merge(fresh);
    if results.has_overrides() && results.runs.iter().any(|r| r.config.is_none()) {
        say!(
            "fslab: bench: {} now holds runs with --config overrides beside runs without; the report marks which",
            args.out.display()
        );
    }
    results.save(&args.out).map_err(|e| format!("{}: {e}", args.out.display()))?;
    write_report(&results, &args.out)?;
    if !failed.is_empty() {
        let runs = crate::out::count(failed.len() as u64, "system run", "system runs");
        return Err(format!("{runs} failed: {}", failed.join("; ")));
    }
    Ok(())
}

/// Refuses a configuration key that no chosen experiment would use (a
/// disk's on a memory disk, the CPU's with `--cpu-model off`, `[disk.log]`
/// without a system that has a log drive): a sensitivity run that changes
/// nothing would be recorded as one that did.
fn check_config_applies(chosen: &[&'static Experiment], settings: &Settings) -> Result<(), String> {
    let Some(config) = &settings.config else { return Ok(()) };
    let used: Vec<String> = chosen
        .iter()
        .filter_map(|e| runner::config_record(e, settings))
        .flat_map(|r| r.overrides.into_iter().map(|o| o.key))
        .collect();
    let unused: Vec<String> = config.keys().into_iter().filter(|k| !used.contains(k)).collect();
    if unused.is_empty() {
        return Ok(());
    }
    let ids: Vec<&str> = chosen.iter().map(|e| e.id).collect();
    Err(format!(
        "{}: {} would change nothing in {} (a disk's key needs a simulated disk, a CPU key the CPU model \
         on, a [disk.log] key a system with a log drive)",
        config.path.display(),
        unused.join(", "),
        ids.join(", ")
    ))
}

fn write_report(results: &Results, dir: &Path) -> Result<(), String> {
    let written = report::write(results, dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    if let Some(problem) = &written.png_problem {
        say!("fslab: bench: plots written as SVG only: {problem}");
    }
    if let Some(mixed) = results.mixed_cpu_charges() {
        let groups: Vec<String> = mixed
            .iter()
            .map(|(c, experiments)| format!("{} ({})", c.name(), experiments.join(", ")))
            .collect();
        outln!("these results mix CPU models (--cpu-model): {}", groups.join("; "))?;
    }
    outln!("claims:")?;
    for c in CLAIMS {
        let o = claim_verdict(c, results);
        outln!("  {:>2}. {:<40} {}", c.number, o.words(), o.summary)?;
    }
    let unstable: Vec<(u32, &str, String)> = CLAIMS
        .iter()
        .flat_map(|c| c.checks.iter().map(move |check| (c.number, check)))
        .map(|(n, check)| (n, check, evaluate(check, results)))
        .filter(|(_, _, o)| o.verdict == Verdict::Unstable)
        .map(|(n, check, o)| (n, check.text, o.measured))
        .collect();
    if !unstable.is_empty() {
        outln!("unstable (the seeds disagree; counted in no claim):")?;
        for (n, text, measured) in unstable {
            outln!("  {n:>2}. {text}: {measured}")?;
        }
    }
    if results.has_overrides() {
        outln!("overridden (--config: a sensitivity run, not the papers' setup):")?;
        for id in report::experiments_in(results) {
            if let Some(config) = results.run(id).and_then(|r| r.config.as_ref()) {
                outln!("  {id}: {} ({})", config.describe(), config.path)?;
            }
        }
    }
    outln!("calibrated (counted in no claim):")?;
    for check in CALIBRATED {
        let o = evaluate(check, results);
        let range = match o.verdict {
            Verdict::Reproduced => "in range",
            Verdict::NotReproduced => "out of range",
            other => other.words(),
        };
        outln!("      {:<40} {}: {}", range, check.experiment, o.measured)?;
    }
    outln!("{}: report.md, results.json, results.csv and {} plot files", dir.display(), written.plots.len())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{CommandFactory, Parser};

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        bench: BenchArgs,
    }

    fn cpu_model(args: &[&str]) -> Result<CpuModelArg, clap::Error> {
        let argv = ["bench", "run", "s93-tpcb"].iter().chain(args);
        match Cli::try_parse_from(argv)?.bench.command {
            BenchCommand::Run(run) => Ok(run.cpu_model),
            _ => panic!("not a run"),
        }
    }

    #[test]
    fn cpu_model_takes_on_off_or_paper_and_defaults_to_on() {
        assert_eq!(cpu_model(&[]).map(CpuModelArg::charges).ok(), Some(Charges::On));
        for (word, charges) in [("on", Charges::On), ("off", Charges::Off), ("paper", Charges::Paper)] {
            let parsed = cpu_model(&["--cpu-model", word]).map(CpuModelArg::charges);
            assert_eq!(parsed.ok(), Some(charges), "{word}");
        }
    }

    #[test]
    fn any_other_cpu_model_is_refused_naming_the_three() {
        for word in ["fast", "On", "", "paper,off"] {
            let Err(e) = cpu_model(&["--cpu-model", word]) else { panic!("{word:?} was accepted") };
            assert_eq!(e.kind(), clap::error::ErrorKind::InvalidValue, "{word:?}");
            let text = e.render().to_string();
            assert!(text.contains("'--cpu-model <on|off|paper>'"), "{text}");
            assert!(text.contains("[possible values: on, off, paper]"), "{text}");
        }
    }

    #[test]
    fn run_help_explains_each_cpu_model() {
        let mut cli = Cli::command();
        let run = cli.find_subcommand_mut("run").expect("run");
        let help = run.render_long_help().to_string();
        assert!(help.contains("--cpu-model <on|off|paper>"), "{help}");
        for value in ["- on:", "- off:", "- paper:"] {
            assert!(help.lines().any(|l| l.trim_start().starts_with(value)), "{value} {help}");
        }
        assert!(help.contains("one word a block"), "{help}");
    }
}
