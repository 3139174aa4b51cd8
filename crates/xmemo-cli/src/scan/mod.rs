//! `xmemo scan PATH…`: the offline skill-safety scanner, for authors and CI.
//!
//! Each PATH becomes one or more skill packages ([`inputs`]): a folder holding SKILL.md, a
//! folder of skill folders (every folder holding a SKILL.md, in any case, at any depth, is
//! its own package), a single file, or a `.zip` of one or several packages. Each package is
//! judged by `xmemo_safety::scan_skill` — pure, offline, no network ever — and the reports
//! are printed as text, JSON or SARIF 2.1.0 ([`render`]). The exit status is the worst
//! verdict (0 clean, 1 suspicious, 2 malicious); 3 means something could not be scanned.

mod inputs;
mod render;

use clap::{Args, ValueEnum};
use std::io::Write;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Mutex, PoisonError};
use xmemo_safety::{Report, ScanFile, Verdict};

/// Exit status: the worst verdict was `suspicious`.
pub const EXIT_SUSPICIOUS: u8 = 1;
/// Exit status: the worst verdict was `malicious`.
pub const EXIT_MALICIOUS: u8 = 2;
/// Exit status: a usage error, or a PATH (or a file in it) that could not be read.
pub const EXIT_ERROR: u8 = 3;

const EXIT_STATUS_HELP: &str = "\
Exit status:
  0  every package is clean (or --fail-on let the worst verdict pass)
  1  the worst verdict is suspicious
  2  the worst verdict is malicious
  3  usage error, or something could not be scanned (a missing PATH, an unreadable file,
     an archive refused as hostile or corrupt, a folder without any SKILL.md); what could be
     scanned is still reported";

#[derive(Args, Debug)]
#[command(
    after_help = "Exit status: 0 clean, 1 suspicious, 2 malicious, 3 error (details: --help)",
    after_long_help = EXIT_STATUS_HELP
)]
pub struct ScanArgs {
    /// Skill folders, folders of skill folders (each folder holding a SKILL.md is scanned as
    /// its own package), single files (a SKILL.md) and .zip packages
    #[arg(value_name = "PATH", required = true)]
    pub paths: Vec<PathBuf>,
    /// text: flagged packages with their findings and a summary line; json: every report;
    /// sarif: a SARIF 2.1.0 log for GitHub code scanning
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Write the output to FILE instead of standard output
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// The verdict that makes the exit status non-zero: suspicious (exit 1 or 2), malicious
    /// (exit 2 only) or never (exit 0 unless something could not be scanned)
    #[arg(long, value_enum, value_name = "VERDICT", default_value_t = FailOn::Suspicious)]
    pub fail_on: FailOn,
    /// Text output: also list clean packages, one line each
    #[arg(short, long)]
    pub verbose: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Text,
    Json,
    Sarif,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
    Suspicious,
    Malicious,
    Never,
}

/// One package's result.
pub struct Scanned {
    /// The package's folder as shown (relative to the current directory when it is inside
    /// it, `/` separators; for a single file, the file); "" is the current directory.
    pub shown: String,
    /// The folder the report's file paths are relative to: the SARIF artifact root.
    pub root: String,
    pub report: Report,
    /// What was left out or cut (`node_modules/`, symlinks, huge files), for the reader.
    pub notes: Vec<String>,
}

/// What one run found, in the order of the PATHs and then of the folders.
pub struct Outcome {
    pub scanned: Vec<Scanned>,
    /// Notes about a PATH as a whole (files in no skill folder).
    pub notes: Vec<String>,
    /// What could not be scanned: each makes the exit status [`EXIT_ERROR`].
    pub errors: Vec<String>,
}

impl Outcome {
    fn worst(&self) -> Option<Verdict> {
        self.scanned.iter().map(|s| s.report.verdict).max()
    }

    fn count(&self, verdict: Verdict) -> usize {
        self.scanned
            .iter()
            .filter(|s| s.report.verdict == verdict)
            .count()
    }
}

pub fn run(args: ScanArgs) -> ExitCode {
    // A PATH that does not exist is a typo (in CI, a wrong working directory): refuse the
    // whole run before scanning anything, rather than report the others as clean.
    for path in &args.paths {
        if let Err(e) = std::fs::metadata(path) {
            to_stderr(&format!("error: cannot scan `{}`: {e}", path.display()));
            return ExitCode::from(EXIT_ERROR);
        }
    }
    let outcome = scan_paths(&args.paths);
    let rendered = match args.format {
        Format::Text => render::text(&outcome, args.verbose),
        Format::Json => render::json(&outcome),
        Format::Sarif => render::sarif(&outcome),
    };
    for note in &outcome.notes {
        to_stderr(&format!("note: {note}"));
    }
    for scanned in &outcome.scanned {
        for note in &scanned.notes {
            to_stderr(&format!("note: {}: {note}", inputs::shown(&scanned.shown)));
        }
    }
    for error in &outcome.errors {
        to_stderr(&format!("error: {error}"));
    }
    let written = match &args.output {
        Some(file) => std::fs::write(file, rendered.as_bytes())
            .map_err(|e| format!("cannot write `{}`: {e}", file.display())),
        None => {
            let mut stdout = std::io::stdout().lock();
            stdout
                .write_all(rendered.as_bytes())
                .and_then(|()| stdout.flush())
                .map_err(|e| format!("cannot write the output: {e}"))
        }
    };
    if let Err(e) = written {
        to_stderr(&format!("error: {e}"));
        return ExitCode::from(EXIT_ERROR);
    }
    // The text format ends with the summary already; a log read by a program (or written to
    // a file) leaves the console without one otherwise.
    if args.format != Format::Text || args.output.is_some() {
        to_stderr(&render::summary(&outcome));
    }
    ExitCode::from(exit_status(
        outcome.worst(),
        args.fail_on,
        !outcome.errors.is_empty(),
    ))
}

/// A line on standard error. Unlike `eprintln!`, a standard error that cannot be written
/// (closed pipe) does not panic: the exit status still tells.
fn to_stderr(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// A command line clap refused: printed as clap prints it, with clap's exit status, except
/// that `xmemo scan`'s usage errors exit with [`EXIT_ERROR`], as 2 means "malicious" there.
pub fn parse_failure(e: &clap::Error) -> ExitCode {
    let _ = e.print();
    let is_scan = std::env::args_os().nth(1).is_some_and(|a| a == "scan");
    if is_scan && e.use_stderr() {
        return ExitCode::from(EXIT_ERROR);
    }
    // clap exits 2 on usage errors, 0 after --help and --version.
    ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2))
}

/// 3 when something could not be scanned (the reports are incomplete), else the worst
/// verdict as far as `fail_on` lets it count.
fn exit_status(worst: Option<Verdict>, fail_on: FailOn, had_errors: bool) -> u8 {
    if had_errors {
        return EXIT_ERROR;
    }
    match (worst, fail_on) {
        (_, FailOn::Never) | (None | Some(Verdict::Clean), _) => 0,
        (Some(Verdict::Suspicious), FailOn::Suspicious) => EXIT_SUSPICIOUS,
        (Some(Verdict::Suspicious), FailOn::Malicious) => 0,
        (Some(Verdict::Malicious), _) => EXIT_MALICIOUS,
    }
}

/// Every PATH's packages, scanned.
fn scan_paths(paths: &[PathBuf]) -> Outcome {
    let cwd = std::env::current_dir().ok();
    let mut packages = Vec::new();
    let mut notes = Vec::new();
    let mut errors = Vec::new();
    for path in paths {
        let collected = inputs::collect(path, cwd.as_deref());
        packages.extend(collected.packages);
        notes.extend(collected.notes);
        errors.extend(collected.errors);
    }
    let mut scanned = Vec::with_capacity(packages.len());
    for (result, mut package_errors) in scan_in_parallel(packages) {
        scanned.extend(result);
        errors.append(&mut package_errors);
    }
    Outcome {
        scanned,
        notes,
        errors,
    }
}

/// The packages scanned on every core, results in the packages' order. Reading a package
/// and scanning it are independent of every other package.
fn scan_in_parallel(packages: Vec<inputs::Package>) -> Vec<(Option<Scanned>, Vec<String>)> {
    let total = packages.len();
    let workers = std::thread::available_parallelism()
        .map_or(1, std::num::NonZeroUsize::get)
        .clamp(1, total.max(1));
    let queue = Mutex::new(packages.into_iter().enumerate());
    let done = Mutex::new(Vec::with_capacity(total));
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                loop {
                    // A worker that panicked cannot have left the iterator half-advanced.
                    let next = queue.lock().unwrap_or_else(PoisonError::into_inner).next();
                    let Some((index, package)) = next else { break };
                    let result = scan_package(package);
                    done.lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push((index, result));
                }
            });
        }
    });
    let mut done = done.into_inner().unwrap_or_else(PoisonError::into_inner);
    done.sort_by_key(|(index, _)| *index);
    done.into_iter().map(|(_, result)| result).collect()
}

/// One package read and scanned; the errors are files that could not be read (the others
/// are scanned all the same). A panic in the scanner is a bug, but it costs only this
/// package: the run goes on and ends with [`EXIT_ERROR`].
fn scan_package(package: inputs::Package) -> (Option<Scanned>, Vec<String>) {
    let shown = package.shown.clone();
    let result = catch_unwind(AssertUnwindSafe(|| {
        let loaded = package.load();
        let files: Vec<ScanFile<'_>> = loaded
            .files
            .iter()
            .map(|(path, bytes)| ScanFile { path, bytes })
            .collect();
        let mut report = xmemo_safety::scan_skill(&files);
        if let Some((scanned_as, real_name)) = &loaded.renamed {
            for finding in &mut report.findings {
                if finding.file == *scanned_as {
                    finding.file.clone_from(real_name);
                }
            }
        }
        let scanned = Scanned {
            shown: loaded.shown,
            root: loaded.root,
            report,
            notes: loaded.notes,
        };
        (Some(scanned), loaded.errors)
    }));
    result.unwrap_or_else(|_| {
        let error = format!(
            "`{}`: the scanner failed on this package (a bug in xmemo: please report it)",
            inputs::shown(&shown)
        );
        (None, vec![error])
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_status_follows_the_worst_verdict_and_fail_on() {
        use FailOn::{Malicious as FailMalicious, Never, Suspicious as FailSuspicious};
        use Verdict::{Clean, Malicious, Suspicious};
        assert_eq!(exit_status(None, FailSuspicious, false), 0);
        assert_eq!(exit_status(Some(Clean), FailSuspicious, false), 0);
        assert_eq!(exit_status(Some(Suspicious), FailSuspicious, false), 1);
        assert_eq!(exit_status(Some(Malicious), FailSuspicious, false), 2);
        assert_eq!(exit_status(Some(Suspicious), FailMalicious, false), 0);
        assert_eq!(exit_status(Some(Malicious), FailMalicious, false), 2);
        assert_eq!(exit_status(Some(Malicious), Never, false), 0);
        assert_eq!(exit_status(Some(Clean), Never, true), EXIT_ERROR);
        assert_eq!(
            exit_status(Some(Malicious), FailSuspicious, true),
            EXIT_ERROR
        );
    }
}
