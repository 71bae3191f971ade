//! outrigger: a fast, Istio-compatible Kubernetes sidecar injector.
//!
//! Subcommands: `inject` (offline manifest injection, flag-compatible with
//! `istioctl kube-inject`), `serve` (the HTTPS admission webhook), `webhook-config`, `check`,
//! `drift`, `doctor`, `preview`, `version`, `completion` and `man`. The flags are defined in [`cli`].

mod check;
mod cli;
mod config_source;
mod doctor;
mod drift;
mod inject;
mod input;
mod kube;
mod man;
mod pki;
mod preview;
mod print;
mod report;
mod safe_write;
mod serve;
mod template_env;
mod version;
mod webhook_config;

use clap::FromArgMatches;

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
    // Exit status of an error: 2 where 1 has a meaning of its own (`inject --diff`: something
    // changed; `check`: not injected; `drift`: drift found; `doctor`: a check failed;
    // `preview`: changes), else 1.
    let (result, error_status) = match cli.command {
        Command::Inject(args) => (inject::run(&args), if args.diff { 2 } else { 1 }),
        Command::Serve(args) => (serve::run(&args).map(|()| ExitCode::SUCCESS), 1),
        Command::WebhookConfig(args) => (webhook_config::run(&args).map(|()| ExitCode::SUCCESS), 1),
        Command::Check(args) => (check::run(&args), 2),
        Command::Drift(args) => (drift::run(&args), 2),
        Command::Doctor(args) => (doctor::run(&args), 2),
        Command::Preview(args) => (preview::run(&args), 2),
        Command::Version(args) => (version::run(&args).map(|()| ExitCode::SUCCESS), 1),
        Command::Completion { shell } => {
            let mut cmd = cli::completion_command();
            clap_complete::generate(shell, &mut cmd, "outrigger", &mut std::io::stdout());
            (Ok(ExitCode::SUCCESS), 1)
        }
        Command::Man(args) => (man::run(&args).map(|()| ExitCode::SUCCESS), 1),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("{}", report::render(&e));
            ExitCode::from(error_status)
        }
    }
}
