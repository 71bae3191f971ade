//! outrigger: a fast, Istio-compatible Kubernetes sidecar injector.
//!
//! Subcommands: `inject` (offline manifest injection, flag-compatible with
//! `istioctl kube-inject`), `serve` (the HTTPS admission webhook), `webhook-config`, `check`,
//! `drift`, `doctor`, `preview`, `version`, `completion` and `man`. The flags are defined in [`cli`].

mod check;
mod cli;
mod decision;
mod doctor;
mod drift;
mod inject;
mod input;
/// The kube layer's mock API server (a `kube::Client` over `tower_test`), for the server's tests.
#[cfg(test)]
#[path = "../../outrigger-kube/src/mock.rs"]
#[allow(dead_code)] // the server's tests use a few of its helpers
mod kube_mock;
mod man;
mod preview;
mod print;
mod safe_write;
mod serve;
mod version;
mod webhook_config;

use clap::FromArgMatches;
// The cluster integration and the configuration loading live in the `outrigger-kube` crate.
use outrigger_kube::{self as kube, config_source, pki, report, template_env};

use cli::{Cli, Command};

/// mimalloc: the pipeline allocates many small JSON nodes per pod; glibc malloc cost ~25% of the
/// webhook's CPU time under load.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    use std::process::ExitCode;
    let cli = match Cli::from_arg_matches(&cli::command().get_matches()) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    // Exit status (README, "Exit status"): 0 ok, 1 findings (`inject --diff`: something
    // changed; `check`: not injected; `drift`: drift found; `doctor`: a check failed; `preview`:
    // changes), 2 an error, in every command (clap's usage errors are 2 too).
    let result = match cli.command {
        Command::Inject(args) => inject::run(&args),
        Command::Serve(args) => serve::run(&args).map(|()| ExitCode::SUCCESS),
        Command::WebhookConfig(args) => webhook_config::run(&args).map(|()| ExitCode::SUCCESS),
        Command::Check(args) => check::run(&args),
        Command::Drift(args) => drift::run(&args),
        Command::Doctor(args) => doctor::run(&args),
        Command::Preview(args) => preview::run(&args),
        Command::Version(args) => version::run(&args).map(|()| ExitCode::SUCCESS),
        Command::Completion { shell } => {
            let mut cmd = cli::completion_command();
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut cmd, "outrigger", &mut script);
            print::stdout(&String::from_utf8_lossy(&script)).map(|()| ExitCode::SUCCESS)
        }
        Command::Man(args) => man::run(&args).map(|()| ExitCode::SUCCESS),
    };
    match result {
        Ok(code) => code,
        // A reader that went away (`outrigger inject ... | head -1`) ends the run quietly, with
        // the status a shell reports for kubectl or any Go program killed by SIGPIPE.
        Err(e) if report::is_closed_pipe(&e) => ExitCode::from(report::CLOSED_PIPE_STATUS),
        Err(e) => {
            eprintln!("{}", report::render(&e));
            ExitCode::from(2)
        }
    }
}
