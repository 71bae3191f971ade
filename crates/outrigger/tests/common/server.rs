//! Starting the real `outrigger serve` for a test: [`Outrigger`] gathers the flags, files and
//! environment of one start-up, [`Server`] is the running process (killed when dropped) with its
//! address, logs, scratch directory and CA bundle.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::kube_api::{kubeconfig, FakeApi};
use super::{holds_within, scratch};

/// Environment variables of the injector that must not leak from the caller into a server.
const ISOLATED_ENV: [&str; 5] = [
    "ENABLE_NATIVE_SIDECARS",
    "PLATFORM",
    "COMPLIANCE_POLICY",
    "RUST_LOG",
    "POD_NAMESPACE",
];

/// One start-up of `outrigger serve --address 127.0.0.1 --port 0 --log-format json`: flags,
/// environment and files, in a scratch directory; [`Outrigger::start`] runs it and waits until it
/// listens.
#[must_use = "start() runs the server"]
pub struct Outrigger {
    dir: PathBuf,
    args: Vec<String>,
    env: Vec<(String, String)>,
    ca_file: Option<PathBuf>,
    quick_drain: bool,
    text_logs: bool,
}

/// Istio's mount path of the injector config: without configuration flags, `serve` serves
/// its embedded default only while this is absent.
pub const EMBEDDED_ONLY_WITHOUT: &str = "/etc/istio/inject/config";

impl Outrigger {
    /// A start-up in a fresh scratch directory named `name` (emptied if it exists).
    pub fn builder(name: &str) -> Outrigger {
        Outrigger::in_dir(&scratch(name))
    }

    /// A start-up in the existing directory `dir` (its files kept: the test wrote them).
    pub fn in_dir(dir: &Path) -> Outrigger {
        Outrigger {
            dir: dir.to_path_buf(),
            args: Vec::new(),
            env: Vec::new(),
            ca_file: None,
            quick_drain: false,
            text_logs: false,
        }
    }

    /// The scratch directory (for files the test writes before the start).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// One more flag (or flag value), in order.
    pub fn flag(mut self, flag: impl Into<String>) -> Outrigger {
        self.args.push(flag.into());
        self
    }

    /// More flags, in order.
    pub fn flags<S: AsRef<str>>(mut self, flags: &[S]) -> Outrigger {
        self.args
            .extend(flags.iter().map(|f| f.as_ref().to_string()));
        self
    }

    /// An environment variable of the server.
    pub fn env(mut self, key: &str, value: &str) -> Outrigger {
        self.env.push((key.to_string(), value.to_string()));
        self
    }

    /// More environment variables of the server.
    pub fn envs<K: AsRef<str>, V: AsRef<str>>(mut self, vars: &[(K, V)]) -> Outrigger {
        self.env.extend(
            vars.iter()
                .map(|(k, v)| (k.as_ref().to_string(), v.as_ref().to_string())),
        );
        self
    }

    /// `--injectConfig`, `--injectValues` and `--meshConfig` naming the given files.
    pub fn config_files(
        self,
        config: impl AsRef<Path>,
        values: impl AsRef<Path>,
        mesh: impl AsRef<Path>,
    ) -> Outrigger {
        let p = |f: &dyn AsRef<Path>| f.as_ref().display().to_string();
        let (config, values, mesh) = (p(&config), p(&values), p(&mesh));
        self.flags(&[
            "--injectConfig",
            &config,
            "--injectValues",
            &values,
            "--meshConfig",
            &mesh,
        ])
    }

    /// [`Outrigger::config_files`] `config`, `values` and `mesh` in `dir`.
    pub fn config_in(self, dir: &Path) -> Outrigger {
        self.config_files(dir.join("config"), dir.join("values"), dir.join("mesh"))
    }

    /// No configuration flag: the server serves its embedded default (Istio's mount path
    /// `/etc/istio/inject/config` must be absent on the test machine, as it is outside a pod; a
    /// configuration path given that does not exist is an error, never the embedded default).
    pub fn embedded_config(self) -> Outrigger {
        assert!(
            !Path::new(EMBEDDED_ONLY_WITHOUT).exists(),
            "{EMBEDDED_ONLY_WITHOUT} exists: serve would read it instead of the embedded default"
        );
        self
    }

    /// A generated certificate whose CA bundle the server writes to `ca.pem` in the scratch
    /// directory (`--caBundleFile`); [`Server::ca`] reads it.
    pub fn generated_ca(self) -> Outrigger {
        let path = self.dir.join("ca.pem");
        self.generated_ca_at(&path)
    }

    /// [`Outrigger::generated_ca`] with the bundle written to `path`.
    pub fn generated_ca_at(mut self, path: &Path) -> Outrigger {
        self.ca_file = Some(path.to_path_buf());
        self.flags(&["--caBundleFile", &path.display().to_string()])
    }

    /// Native sidecars on or off (`--native-sidecars=BOOL`).
    pub fn native_sidecars(self, on: bool) -> Outrigger {
        self.flag(format!("--native-sidecars={on}"))
    }

    /// Logs in the text format (`--log-format text`) instead of JSON.
    pub fn text_logs(mut self) -> Outrigger {
        self.text_logs = true;
        self
    }

    /// A 100 ms drain delay on shutdown unless the flags set `--drain-delay` themselves.
    pub fn quick_drain(mut self) -> Outrigger {
        self.quick_drain = true;
        self
    }

    /// `--kube --namespace outrigger` against `api`: a kubeconfig for it and HOME in the scratch
    /// directory, the proxy bypassed for the fake.
    pub fn kube(self, api: &FakeApi) -> Outrigger {
        self.kube_at(api.port)
    }

    /// [`Outrigger::kube`] against whatever listens (or will listen) on 127.0.0.1:`port`.
    pub fn kube_at(self, port: u16) -> Outrigger {
        self.kube_env(port)
            .flags(&["--kube", "--namespace", "outrigger"])
    }

    /// The environment of [`Outrigger::kube_at`] (a kubeconfig for 127.0.0.1:`port`, HOME, the
    /// proxy bypassed), without its flags: for flags the test takes from elsewhere (a rendered
    /// Deployment's).
    pub fn kube_env(self, port: u16) -> Outrigger {
        let path = self.dir.join("kubeconfig");
        std::fs::write(&path, kubeconfig(port)).expect("write kubeconfig");
        let (kc, home) = (path.display().to_string(), self.dir.display().to_string());
        self.envs(&[
            ("NO_PROXY", "127.0.0.1,localhost"),
            ("no_proxy", "127.0.0.1,localhost"),
            ("KUBECONFIG", kc.as_str()),
            ("HOME", home.as_str()),
        ])
    }

    /// Run the server and wait until it listens; panics with its logs if it exits or does not
    /// listen within 30 s.
    pub fn start(mut self) -> Server {
        if self.quick_drain && !self.args.iter().any(|a| a == "--drain-delay") {
            self.args.extend(["--drain-delay".into(), "100ms".into()]);
        }
        // Servers run side by side: no fixed metrics port unless the test asks for one.
        if !self.args.iter().any(|a| a.starts_with("--metrics-port")) {
            self.args.extend(["--metrics-port".into(), "off".into()]);
        }
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_outrigger"));
        cmd.args([
            "serve",
            "--address",
            "127.0.0.1",
            "--port",
            "0",
            "--log-format",
            if self.text_logs { "text" } else { "json" },
        ])
        .args(&self.args);
        for var in ISOLATED_ENV {
            cmd.env_remove(var);
        }
        cmd.env("RUST_BACKTRACE", "0");
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn outrigger");
        let stderr = child.stderr.take().expect("stderr piped");
        let logs = Arc::new(Mutex::new(Vec::new()));
        let sink = logs.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                sink.lock().expect("log lock").push(line);
            }
        });
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let found = logs.lock().expect("log lock").iter().find_map(|l| {
                if !l.starts_with('{') {
                    // Text: `... outrigger webhook listening (...) address=127.0.0.1:PORT`.
                    let rest = l.split("outrigger webhook listening").nth(1)?;
                    let a = rest.split("address=").nth(1)?;
                    return Some(a.split_whitespace().next()?.to_string());
                }
                let v: Value = serde_json::from_str(l).ok()?;
                (v["message"]
                    .as_str()?
                    .starts_with("outrigger webhook listening"))
                .then(|| v["address"].as_str().map(str::to_string))?
            });
            if let Some(a) = found {
                let addr = a.parse().expect("address parses");
                return Server {
                    child,
                    addr,
                    logs,
                    dir: self.dir,
                    ca_file: self.ca_file,
                };
            }
            if let Ok(Some(status)) = child.try_wait() {
                panic!(
                    "server exited early ({status}):\n{}",
                    logs.lock().expect("log lock").join("\n")
                );
            }
            assert!(
                Instant::now() < deadline,
                "server did not start:\n{}",
                logs.lock().expect("log lock").join("\n")
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A running `outrigger serve`, killed when dropped.
pub struct Server {
    child: Child,
    /// Listening address.
    pub addr: SocketAddr,
    /// Log lines (JSON) seen so far.
    pub logs: Arc<Mutex<Vec<String>>>,
    /// The scratch directory of its start-up.
    pub dir: PathBuf,
    ca_file: Option<PathBuf>,
}

impl Server {
    /// The CA bundle the server wrote ([`Outrigger::generated_ca`]).
    pub fn ca(&self) -> Vec<u8> {
        let path = self
            .ca_file
            .as_ref()
            .expect("the server was started with generated_ca()");
        std::fs::read(path).expect("CA bundle written")
    }

    /// Send SIGTERM.
    pub fn sigterm(&self) {
        let ok = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(ok.success());
    }

    /// Wait for the process to exit.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Ok(Some(s)) = self.child.try_wait() {
                return Some(s);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// All log lines joined.
    pub fn log_text(&self) -> String {
        self.logs.lock().expect("log lock").join("\n")
    }

    /// Wait until a log line contains `needle`.
    pub async fn wait_log(&self, needle: &str, timeout: Duration) -> bool {
        holds_within(timeout, || async {
            self.logs
                .lock()
                .expect("log lock")
                .iter()
                .any(|l| l.contains(needle))
        })
        .await
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A server with the embedded default configuration (policy enabled), a generated certificate,
/// native sidecars off, a 100 ms drain delay unless `extra` sets one, and `extra` flags; the
/// server and its CA bundle.
pub fn start_embedded(name: &str, extra: &[&str]) -> (Server, Vec<u8>) {
    let server = Outrigger::builder(name)
        .embedded_config()
        .generated_ca()
        .native_sidecars(false)
        .quick_drain()
        .flags(extra)
        .start();
    let ca = server.ca();
    (server, ca)
}
