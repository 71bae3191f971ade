//! outrigger: a fast, Istio-compatible Kubernetes sidecar injector.
//!
//! Subcommands: `inject` (offline manifest injection, flag-compatible with
//! `istioctl kube-inject`), `serve` (the HTTPS admission webhook), `webhook-config` and `check`.

mod check_cmd;
mod inject_cmd;
mod input;
mod kube;
mod serve;
mod settings;
mod webhook_config;

use clap::{Parser, Subcommand};

/// mimalloc: the pipeline allocates many small JSON nodes per pod; glibc malloc cost ~25% of the
/// webhook's CPU time under load.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Fast, Istio-compatible Kubernetes sidecar injector.
#[derive(Debug, Parser)]
#[command(name = "outrigger", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Inject sidecars into Kubernetes manifests (like `istioctl kube-inject`).
    Inject(inject_cmd::InjectArgs),
    /// Run the HTTPS mutating admission webhook (like istiod's `/inject`).
    Serve(Box<serve::ServeArgs>),
    /// Print the MutatingWebhookConfiguration that routes pods to the injector (Istio chart's).
    WebhookConfig(webhook_config::WebhookConfigArgs),
    /// Explain whether a pod or workload would be injected, and why.
    Check(check_cmd::CheckArgs),
    /// Print the version, the git commit and the Istio versions the injector was verified against.
    Version,
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completion {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

/// What `outrigger version` says the injector was verified against.
const VERIFIED_AGAINST: &str = "Istio's golden injection cases (pkg/kube/inject/testdata) of \
istio/istio commit 86c9f01fd735 (2026-08-22): 104 of 104 kube-inject cases; the embedded default \
config names proxy image tag 1.28.0";

/// Text of `outrigger version`.
fn version_text() -> String {
    format!(
        "outrigger {}\ngit commit: {}\nverified against: {VERIFIED_AGAINST}\n",
        env!("CARGO_PKG_VERSION"),
        option_env!("OUTRIGGER_GIT_COMMIT").unwrap_or("unknown"),
    )
}

fn main() -> std::process::ExitCode {
    use std::process::ExitCode;
    let cli = Cli::parse();
    // Exit status of an error: 2 where 1 has a meaning of its own (`inject --diff`: something
    // changed; `check`: not injected), else 1.
    let (result, error_status) = match cli.command {
        Command::Inject(args) => (inject_cmd::run(&args), if args.diff { 2 } else { 1 }),
        Command::Serve(args) => (serve::run(&args).map(|()| ExitCode::SUCCESS), 1),
        Command::WebhookConfig(args) => (webhook_config::run(&args).map(|()| ExitCode::SUCCESS), 1),
        Command::Check(args) => (check_cmd::run(&args), 2),
        Command::Version => {
            print!("{}", version_text());
            (Ok(ExitCode::SUCCESS), 1)
        }
        Command::Completion { shell } => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut cmd, "outrigger", &mut std::io::stdout());
            (Ok(ExitCode::SUCCESS), 1)
        }
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("Error: {e:#}");
            ExitCode::from(error_status)
        }
    }
}
