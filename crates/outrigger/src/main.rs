//! outrigger: a fast, Istio-compatible Kubernetes sidecar injector.
//!
//! Subcommands: `inject` (offline manifest injection, flag-compatible with
//! `istioctl kube-inject`) and `serve` (the HTTPS admission webhook).

mod check_cmd;
mod inject_cmd;
mod serve;
mod kube;
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
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Inject(args) => inject_cmd::run(&args),
        Command::Serve(args) => serve::run(&args),
        Command::WebhookConfig(args) => webhook_config::run(&args),
        Command::Check(args) => check_cmd::run(&args),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("Error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
