//! Differential tests of the fast loader's memo ([`super::memo`]): reading a text with the memo
//! warm from the previous text must give exactly what reading it cold gives (the same tree, key
//! order and number kinds included, or the same refusal, and then the same full-loader result
//! or error), over many texts that differ from the previous one by a few line edits.

use serde_json::Value;

use super::memo::{MAX_LEN, MIN_LEN};
use super::tests_fast::same;
use super::{fast, parse};

/// A rendered-sidecar-like patch: block mappings and sequences, compact mappings in entries, a
/// flow mapping over several lines, literal blocks, comments and blank lines.
const SEED: &str = "\n\nmetadata:\n  labels:\n    security.istio.io/tlsMode: \"istio\"\n    service.istio.io/canonical-name: \"hello\"\n    service.istio.io/canonical-revision: \"latest\"\n  annotations: {\n    istio.io/rev: \"default\",\n    kubectl.kubernetes.io/default-container: \"hello\",\n  }\nspec:\n  initContainers:\n  \n  - name: init\n  \n    image: \"registry.example/proxy:1.0\"\n    args:\n    - iptables\n    - \"-p\"\n    - \"15001\"\n    -  \"1337\" \n    - \"--log=default:info\"\n    \n    resources:\n  \n      requests:\n        cpu: \"200m\"\n        \n    securityContext:\n      capabilities:\n        add:\n        - NET_ADMIN\n        drop:\n        - ALL\n      runAsUser: 0\n  containers:\n  - name: proxy\n    image: \"registry.example/proxy:1.0\"\n    ports:\n    - containerPort: 15090\n      protocol: TCP\n      name: http-envoy-prom\n    env:\n    - name: POD_NAME\n      valueFrom:\n        fieldRef:\n          fieldPath: metadata.name\n    - name: PROXY_CONFIG\n      value: |\n             {}\n    - name: POD_PORTS\n      value: |-\n        [\n            {\"name\":\"http\",\"containerPort\":80}\n        ]\n    - name: WORKLOAD_NAME\n      value: \"hello\"\n    \n    - name: KEEP\n      value: |+\n        kept\n\n    - name: MESH_ID\n      value: \"cluster.local\"\n    readinessProbe:\n      httpGet:\n        path: /healthz/ready\n        port: 15021\n      periodSeconds: 15\n    volumeMounts:\n    - name: workload-socket\n      mountPath: /var/run/secrets/workload-spiffe-uds\n    # a comment between entries\n    - mountPath: /etc/istio/proxy\n      name: istio-envoy\n  volumes:\n  - emptyDir:\n    name: workload-socket\n  - emptyDir:\n      medium: Memory\n    name: istio-envoy\n  - name: podinfo\n    downwardAPI:\n      items:\n        - path: \"labels\"\n          fieldRef:\n            fieldPath: metadata.labels\n        - - nested\n          - [a, {b: c}]\n  - name: token\n    projected:\n      sources:\n      - serviceAccountToken:\n          path: istio-token\n          expirationSeconds: 43200\n";

/// A small fixed-seed PRNG (xorshift64*), so that failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

/// Values a scalar may be changed to: other strings, YAML 1.1 words and numbers, quoted
/// scalars, flow collections, a literal block header, anchors, aliases, tags, errors.
const VALUES: &[&str] = &[
    "x",
    "\"h000001\"",
    "'q''s'",
    "yes",
    "010",
    "1.5",
    "~",
    "",
    ".inf",
    "[a, b]",
    "{a: 1, b: [2]}",
    "{a: 1,\n  b: 2}",
    "|",
    "|-",
    "&a x",
    "*a",
    "!!str 1",
    "a: b",
    "\"unterminated",
    "x #c",
    "x\ty",
    "- y",
];

/// Lines that may be inserted.
const LINES: &[&str] = &[
    "- x",
    "  - x",
    "    - name: extra\n      value: v",
    "  k: v",
    "    k: v",
    "# c",
    "",
    "   ",
    "---",
    "...",
    "&anchor",
    "    - &a x",
    "    - *a",
    "      key: &b {a: 1}",
    "    extra: |\n      text\n",
    "x\r",
    "\t- x",
];

/// One line edit of `text`: a changed scalar, an inserted, removed, duplicated or swapped line,
/// a changed indentation, a line turned into `- x`, an anchor added.
/// Most edits keep the text in the fast loader's subset; one in `4 + salt % 2` may not.
fn mutate(text: &str, rng: &mut Rng, salt: usize) -> String {
    let mut lines: Vec<String> = text.split('\n').map(str::to_string).collect();
    let i = rng.below(lines.len());
    let indent = lines[i].len() - lines[i].trim_start().len();
    match rng.below(9) {
        0 | 1 => {
            let line = &lines[i];
            let v = if rng.below(4 + salt % 2) == 0 {
                rng.pick(VALUES)
            } else {
                rng.pick(&VALUES[..12])
            };
            lines[i] = match line.find(": ") {
                Some(at) => format!("{}: {v}", &line[..at]),
                None if line.trim_start().starts_with("- ") => {
                    format!("{}- {v}", " ".repeat(indent))
                }
                None => format!("{line}{}", rng.pick(&["x", " ", ":", "#", "\""])),
            };
        }
        2 if rng.below(3) == 0 => lines.insert(i, rng.pick(LINES).to_string()),
        2 => lines.insert(i, rng.pick(&LINES[..8]).to_string()),
        3 => {
            lines.remove(i);
        }
        4 => {
            let l = lines[i].clone();
            lines.insert(i, l);
        }
        5 => {
            let n = [0, 1, 2, 3, 4, 6][rng.below(6)];
            lines[i] = format!("{}{}", " ".repeat(n), lines[i].trim_start());
        }
        6 => lines[i] = format!("{}- x", " ".repeat(indent)),
        7 => {
            if let Some(at) = lines[i].find(": ") {
                let (k, v) = lines[i].split_at(at + 2);
                lines[i] = format!("{k}&a{} {v}", rng.below(3));
            } else {
                lines[i].push_str(" *a0");
            }
        }
        _ if i + 1 < lines.len() => lines.swap(i, i + 1),
        _ => {}
    }
    lines.join("\n")
}

/// Read `text` with the memo as the previous reads left it, and cold; assert both the same
/// (and the same through [`super::from_str`], errors included). Returns whether the fast
/// loader read it.
fn warm_equals_cold(text: &str, what: &str) -> bool {
    let cold = fast::cold(text);
    let warm = fast::from_str(text);
    match (&warm, &cold) {
        (Some(w), Some(c)) => assert!(
            same(w, c),
            "{what}: memo differs on {text:?}:\n warm {w}\n cold {c}"
        ),
        (None, None) => {}
        _ => panic!("{what}: warm {warm:?}, cold {cold:?} on {text:?}"),
    }
    // The whole reader, with the memo warm again (from this same text).
    let full = super::from_str(text);
    let expected = match cold {
        Some(v) => Ok(v),
        None => parse::from_str(text),
    };
    match (&full, &expected) {
        (Ok(a), Ok(b)) => assert!(same(a, b), "{what}: from_str differs on {text:?}"),
        (Err(a), Err(b)) => assert_eq!(a, b, "{what}: errors differ on {text:?}"),
        _ => panic!("{what}: from_str {full:?}, expected {expected:?} on {text:?}"),
    }
    warm.is_some()
}

/// Each mutant read right after the seed it was made from (most of its units then have a
/// remembered counterpart of the same text), and chains of mutants each read after the last.
#[test]
fn warm_reads_equal_cold_reads_on_line_edits() {
    let runs: usize = std::env::var("YAML_MEMO_MUTATIONS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1500);
    let mut rng = Rng(0x5EED_0033_CAFE_F00D);
    let (hits0, _, _, _) = fast::memo_counts();
    let (mut read, mut seen) = (0, 0);
    for _ in 0..runs {
        assert!(warm_equals_cold(SEED, "seed"));
        let mut text = mutate(SEED, &mut rng, 0);
        seen += 1;
        read += usize::from(warm_equals_cold(&text, "mutant after the seed"));
        // A chain: each mutant after the previous one the fast loader read (read again after
        // a refusal, which empties the memo).
        let mut last = if read > 0 {
            text.clone()
        } else {
            SEED.to_string()
        };
        for step in 1..4 {
            text = mutate(&last, &mut rng, step);
            seen += 1;
            if warm_equals_cold(&text, "mutant after a mutant") {
                read += 1;
                last = text;
            } else {
                warm_equals_cold(&last, "the last mutant read");
            }
        }
    }
    let (hits, misses, _, _) = fast::memo_counts();
    eprintln!(
        "memo: {} units reused, {misses} read again; fast loader read {read} of {seen}",
        hits - hits0
    );
    assert!(
        read * 6 > seen,
        "the fast loader gave up on almost every mutant"
    );
    assert!(
        hits - hits0 > (runs * 10) as u64,
        "the memo was hardly used: {} hits",
        hits - hits0
    );
}

/// The stream a server sees: the same render with a new name each time. Every read after the
/// first reuses the units that did not change, and equals a cold read.
#[test]
fn distinct_renders_reuse_what_did_not_change() {
    let (hits0, misses0, _, _) = fast::memo_counts();
    let mut text = String::new();
    for i in 0..50 {
        text = SEED.replace("\"hello\"", &format!("\"h{i:09}\""));
        assert!(warm_equals_cold(&text, "distinct render"));
    }
    let (hits, misses, units, bytes) = fast::memo_counts();
    eprintln!(
        "distinct renders: {} hits, {} misses",
        hits - hits0,
        misses - misses0
    );
    // Each render reads again the root, metadata, labels, annotations, spec, containers, its
    // entry, env and its changed entry; it reuses initContainers, the other entries of env,
    // the probe, the mounts, the volumes, ...
    assert!(hits - hits0 >= 49 * 8, "hits {}", hits - hits0);
    assert!(misses - misses0 >= 49 * 8, "misses {}", misses - misses0);
    assert_eq!(bytes, text.len(), "the memo holds the last text");
    assert!(units > 10 && units < SEED.lines().count());
}

/// The same text twice: the second read reuses the root (one hit, nothing read again).
#[test]
fn an_unchanged_text_is_reused_whole() {
    assert!(warm_equals_cold(SEED, "first"));
    let (h0, m0, _, _) = fast::memo_counts();
    assert!(same(
        &fast::from_str(SEED).expect("read"),
        &fast::cold(SEED).expect("read")
    ));
    let (h1, m1, _, _) = fast::memo_counts();
    assert_eq!((h1 - h0, m1 - m0), (1, 0));
}

/// Bounds: texts over [`MAX_LEN`] and under [`MIN_LEN`] neither use nor replace the memo, and
/// a text the fast loader gives up on empties it; the memo holds one text.
#[test]
fn the_memo_is_bounded() {
    assert!(warm_equals_cold(SEED, "seed"));
    let (_, _, units, bytes) = fast::memo_counts();
    assert_eq!(bytes, SEED.len());
    let small = "a:\n  b: 1\n";
    assert!(small.len() < MIN_LEN);
    assert!(warm_equals_cold(small, "small"));
    assert_eq!(fast::memo_counts().2, units, "a small text leaves the memo");
    let mut big = String::new();
    let mut i = 0;
    while big.len() <= MAX_LEN {
        big.push_str(&format!("k{i}:\n  - name: n{i}\n    value: v\n"));
        i += 1;
    }
    assert!(warm_equals_cold(&big, "big"));
    assert_eq!(
        fast::memo_counts().3,
        SEED.len(),
        "a big text leaves the memo"
    );
    let bad = format!("{SEED}a: &x 1\n");
    assert!(!warm_equals_cold(&bad, "given up"));
    assert_eq!(fast::memo_counts().2..=fast::memo_counts().3, 0..=0);
    for i in 0..200 {
        let text = format!("{SEED}extra{i}:\n  - {i}\n");
        assert!(warm_equals_cold(&text, "distinct"));
        let (_, _, units, bytes) = fast::memo_counts();
        assert_eq!(bytes, text.len());
        assert!(units <= text.lines().count());
    }
}

/// Reuse and the values around it: a unit is reused with its remembered value only where its
/// text, the bytes after it, its column and its depth are the same.
#[test]
fn what_follows_a_unit_is_compared() {
    let (hits0, _, _, _) = fast::memo_counts();
    let pad =
        "# padding to reach the memo's smallest text ............................\n".repeat(4);
    let pairs = [
        // The bytes after a sequence: the next line starts an entry at the same column, or not.
        (
            "a:\n- x: 1\n  y: 2\n- z\nb: 1\n",
            "a:\n- x: 1\n  y: 2\n-z\nb: 1\n",
        ),
        // The next line's indentation, whose last space is the unit's last byte (the bytes
        // from the next line's content on being the same).
        (
            "top:\n  a:\n    k: v\n  bbb: 1\n",
            "top:\n  a:\n    k: v\n bbbb: 1\n",
        ),
        (
            "top:\n  a:\n    k: v\n  - - x\n",
            "top:\n  a:\n    k: v\n - - x\n",
        ),
        // A literal block's chomping depends on the lines after it.
        (
            "a:\n  k: |+\n    t\n\nb: 1\n",
            "a:\n  k: |+\n    t\n\n\nb: 1\n",
        ),
        // A document end right after a unit.
        (
            "a:\n  k: v\n  l: w\nb: 1\n",
            "a:\n  k: v\n  l: w\n---\nb: 1\n",
        ),
        ("a:\n  k: v\n  l: w\nb: 1\n", "a:\n  k: v\n  l: w\n...\n"),
        // The same text at another column.
        ("a:\n  k: v\n  l: w\n", "a:\n   k: v\n   l: w\n"),
        ("a:\n  - k: v\n    l: w\n", "a:\n- k: v\n  l: w\n"),
        // The same text at another depth, under another key, as a sequence entry.
        ("a:\n  k: v\n  l: w\n", "b:\n  k: v\n  l: w\n"),
        ("a:\n  k: v\n  l: w\n", "- a:\n    k: v\n    l: w\n"),
        // A mapping value turned into a flow collection and back.
        (
            "a:\n  k: {x: 1,\n    y: 2}\n",
            "a:\n  k:\n    {x: 1,\n    y: 2}\n",
        ),
        // Duplicate keys across a reused unit.
        ("a:\n  k: v\nb: 1\n", "a:\n  k: v\na: 1\n"),
        // Text at the end without a line break.
        ("a:\n  k: |\n    t\n", "a:\n  k: |\n    t"),
    ];
    // Units under 64 bytes are not remembered: make the inner ones longer.
    let long = |t: &str| {
        let z = "z".repeat(70);
        t.replace("k: v", &format!("k: {z}"))
            .replace("    t", &format!("    t{z}"))
            .replace("{x: 1", &format!("{{x: {z}"))
    };
    for (first, second) in pairs {
        for (a, b) in [(first, second), (second, first)] {
            let (a, b) = (format!("{pad}{}", long(a)), format!("{pad}{}", long(b)));
            warm_equals_cold(&a, "first");
            warm_equals_cold(&b, "second");
            warm_equals_cold(&a, "first again");
        }
    }
    let (hits, _, _, _) = fast::memo_counts();
    assert!(hits - hits0 > pairs.len() as u64, "inner units were reused");
}

/// Values built from the memo are independent trees: changing one leaves the memo's intact.
#[test]
fn reused_trees_are_copies() {
    let mut first = fast::from_str(SEED).expect("read");
    first["spec"]["containers"][0]["name"] = Value::from("changed");
    let second = fast::from_str(SEED).expect("read");
    assert!(same(&second, &fast::cold(SEED).expect("read")));
}
