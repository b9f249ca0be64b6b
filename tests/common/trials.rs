//! For test files that run with `harness = false`: each test runs what it
//! names, or, when what it needs is not on this machine, reports itself
//! ignored with the reason (printed once on stderr), never a silent pass.

use libtest_mimic::{Arguments, Trial};

/// A test: its name, and what it runs, or why it cannot run here.
pub type Test = (&'static str, Result<fn(), String>);

/// Runs `tests` as the standard harness would (filters, `--ignored`...).
pub fn run(tests: Vec<Test>) -> std::process::ExitCode {
    let args = Arguments::from_args();
    let trials = tests
        .into_iter()
        .map(|(name, test)| match test {
            Ok(f) => Trial::test(name, move || {
                f();
                Ok(())
            }),
            Err(why) => {
                eprintln!("{name}: ignored: {why}");
                Trial::test(name, move || Err(why.into())).with_ignored_flag(true)
            }
        })
        .collect();
    libtest_mimic::run(&args, trials).exit_code()
}

/// Whether `program` runs here (`program arg` exits 0).
pub fn runs(program: &str, arg: &str) -> bool {
    std::process::Command::new(program)
        .arg(arg)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// `test`, unless this is the Windows build Wine runs, which cannot run a
/// test of links ([`super::LINKS_UNDER_WINE`]).
#[allow(dead_code)]
pub fn with_links(test: fn()) -> Result<fn(), String> {
    if super::UNDER_WINE {
        Err(super::LINKS_UNDER_WINE.to_owned())
    } else {
        Ok(test)
    }
}

/// Why a test of something only Unix has (modes, signals, users, FIFOs)
/// does not run on Windows.
#[allow(dead_code)]
pub fn unix_only(what: &str) -> Result<fn(), String> {
    Err(format!("{what} is Unix's alone"))
}
