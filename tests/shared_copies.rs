//! The host captures under `tests/fixtures/` are unchanged copies of the
//! shared ones (`../shared/fixtures/`, captured from the real CLIs), file by
//! file, for every host. A checkout with no `../shared` beside it (a clean CI
//! clone) reports the test ignored, with the reason; one that has it but
//! lacks a host's folder fails.

mod common;

use common::*;

const HOSTS: [&str; 3] = ["claude-code-2.1.332", "codex-0.171.0", "gemini-cli-0.61.0"];

fn the_host_captures_are_an_unchanged_copy_of_the_shared_ones() {
    for host in HOSTS {
        let ours = repo().join("tests/fixtures").join(host);
        let shared = repo().join("../shared/fixtures").join(host);
        let entries =
            std::fs::read_dir(&shared).unwrap_or_else(|e| panic!("{}: {e}", shared.display()));
        let mut compared = 0;
        for e in entries {
            let original = e.unwrap().path();
            let copy = ours.join(original.file_name().unwrap());
            assert_eq!(
                std::fs::read(&copy).ok(),
                Some(std::fs::read(&original).unwrap()),
                "{} differs from {}",
                copy.display(),
                original.display()
            );
            compared += 1;
        }
        assert!(compared > 10, "{host}: {compared} captures compared");
    }
}

fn main() -> std::process::ExitCode {
    let shared = repo().join("../shared/fixtures");
    let here = shared
        .is_dir()
        .then_some(the_host_captures_are_an_unchanged_copy_of_the_shared_ones as fn())
        .ok_or_else(|| {
            format!(
                "no {} beside the checkout: the copies stand alone",
                shared.display()
            )
        });
    trials::run(vec![(
        "the_host_captures_are_an_unchanged_copy_of_the_shared_ones",
        here,
    )])
}
