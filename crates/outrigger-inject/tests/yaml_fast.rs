//! Differential tests of the YAML fast path (`yaml::fast_from_str`) against the full loader
//! (`yaml::slow_from_str`): whenever the fast path answers, both trees must be identical (key
//! order and number kinds included). Inputs: every file of the Istio conformance corpus (read in
//! place from `../shared/conformance/istio`, skipped with a notice when absent), the corpus
//! documents re-emitted with `yaml::to_string`, every text that real injections parse (rendered
//! sidecar templates included), and seeded random mutations of template-like snippets.

#[path = "../../outrigger-go/tests/go_oracle/mod.rs"]
mod go_oracle;
#[path = "../../outrigger-go/tests/harness/mod.rs"]
mod harness;
mod inputs;

use std::path::{Path, PathBuf};

use inputs::{corpus, hello_params, snapshot, XorShift};
use outrigger_go::yaml;
use outrigger_inject::inject;
use serde_json::json;

/// Assert that the fast path agrees with the full loader when it answers; return whether it did.
fn check(text: &str, origin: &str) -> bool {
    let Some(fast) = yaml::fast_from_str(text) else {
        return false;
    };
    match yaml::slow_from_str(text) {
        // serde_json's map equality ignores key order: compare the serialised forms.
        Ok(slow) => assert_eq!(
            serde_json::to_string(&fast).ok(),
            serde_json::to_string(&slow).ok(),
            "{origin}: fast path differs on {text:?}"
        ),
        Err(e) => panic!("{origin}: fast path accepted {text:?}, full loader: {e}"),
    }
    true
}

/// Tally of texts checked and texts the fast path read.
#[derive(Default)]
struct Tally {
    seen: usize,
    taken: usize,
}

impl Tally {
    fn add(&mut self, text: &str, origin: &str) -> bool {
        let taken = check(text, origin);
        self.seen += 1;
        self.taken += usize::from(taken);
        taken
    }
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else {
            out.push(p);
        }
    }
}

/// (b) and (c): every corpus file, split into documents, and every parsed document re-emitted.
fn corpus_files_and_their_emitted_trees() {
    let root = corpus().expect("the harness checked the corpus");
    let mut paths = Vec::new();
    files(&root, &mut paths);
    paths.sort();
    let (mut read, mut emitted) = (Tally::default(), Tally::default());
    for path in &paths {
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        let origin = path.display().to_string();
        read.add(&text, &origin);
        let Ok(docs) = yaml::split_documents(&text) else {
            continue;
        };
        for doc in docs {
            read.add(&doc, &origin);
            if let Ok(v) = yaml::slow_from_str(&doc) {
                let out = yaml::to_string(&v);
                emitted.add(&out, &format!("{origin} (emitted)"));
            }
        }
    }
    eprintln!(
        "corpus: fast path read {} of {} texts; {} of {} emitted documents",
        read.taken, read.seen, emitted.taken, emitted.seen
    );
    assert!(
        read.taken * 2 > read.seen,
        "fast path gave up on most corpus texts"
    );
    assert!(
        emitted.taken * 10 > emitted.seen * 9,
        "fast path gave up on more than a tenth of the emitted documents"
    );
}

/// (c): the texts that webhook injection of a plain pod parses (the rendered sidecar template)
/// are all read by the fast path, identically.
fn rendered_templates_take_the_fast_path() {
    let root = corpus().expect("the harness checked the corpus");
    let settings = root.join("settings/default");
    let s = snapshot(&settings, &settings.join("mesh.yaml"), false).expect("default settings");
    let pod = json!({"metadata":{"name":"hello","namespace":"default","labels":{"app":"hello"},
        "annotations":{"sidecar.istio.io/proxyCPU":"200m"}},
      "spec":{"containers":[{"name":"hello","image":"x","env":[{"name":"A","value":"1"}],
        "ports":[{"name":"http","containerPort":80}]}]}});
    for native in [false, true] {
        let p = hello_params(&s, native);
        let (result, texts) = yaml::traced(|| inject::inject_pod(&pod, &p).map(|_| ()));
        result.expect("injection");
        assert!(!texts.is_empty(), "injection parsed no YAML");
        for t in &texts {
            assert!(check(t, "rendered template"), "fast path gave up on:\n{t}");
        }
    }
}

/// Read `text` with the fast path's memo warm from the texts read before on this thread, and
/// cold; assert the same answer (tree or refusal). Returns whether the fast path read it.
fn warm_equals_cold(text: &str, origin: &str) -> bool {
    let cold = yaml::fast_from_str_cold(text);
    let warm = yaml::fast_from_str(text);
    assert_eq!(
        warm.as_ref().map(|v| serde_json::to_string(v).ok()),
        cold.as_ref().map(|v| serde_json::to_string(v).ok()),
        "{origin}: memo-warm read differs from a cold one on {text:?}"
    );
    warm.is_some()
}

/// (c): the rendered sidecar templates of a stream of distinct pods (a new `app` label, a new
/// Deployment, other ports and container names), each read with the memo warm from the one
/// before, and with seeded line edits of them: warm reads equal cold reads, and the memo is
/// used.
fn rendered_templates_of_distinct_pods_warm_equal_cold() {
    let root = corpus().expect("the harness checked the corpus");
    let settings = root.join("settings/default");
    let s = snapshot(&settings, &settings.join("mesh.yaml"), false).expect("default settings");
    let (hits0, _) = yaml::fast_memo_counts();
    let mut rng = XorShift(0x0033_5EED_D157_1C70);
    let mut rendered = Vec::new();
    for i in 0..40 {
        let app = format!("h{i:09}");
        let pod = json!({"metadata":{"name":format!("p{}", i % 3),"namespace":"default",
            "labels":{"app":app},
            "annotations":{"sidecar.istio.io/proxyCPU":"200m"}},
          "spec":{"containers":[{"name":if i % 4 == 0 { "web" } else { "hello" },"image":"x",
            "env":[{"name":"A","value":"1"}],
            "ports":[{"name":"http","containerPort":80 + i % 2}]}]}});
        let mut p = hello_params(&s, i % 5 == 0);
        if i % 2 == 1 {
            p.workload.name = format!("deploy{}", i % 7);
        }
        let (result, texts) = yaml::traced(|| inject::inject_pod(&pod, &p).map(|_| ()));
        result.expect("injection");
        for t in &texts {
            assert!(
                warm_equals_cold(t, "rendered template"),
                "fast path gave up"
            );
        }
        rendered.extend(texts);
    }
    let (hits, _) = yaml::fast_memo_counts();
    assert!(
        hits - hits0 >= 39,
        "the memo was not used: {} hits",
        hits - hits0
    );
    // Line edits of the rendered texts, each read after the text it was made from.
    for t in &rendered {
        for _ in 0..20 {
            warm_equals_cold(t, "rendered template");
            let mut edited = t.clone();
            for _ in 0..=rng.below(2) {
                edited = mutate(&edited, &mut rng);
            }
            warm_equals_cold(&edited, "edited rendered template");
        }
    }
}

/// (c): every text parsed while running the corpus' kube-inject cases (inputs, configs, meshes,
/// rendered templates, annotations).
fn corpus_injections() {
    let root = corpus().expect("the harness checked the corpus");
    let mut tally = Tally::default();
    for (name, t) in &inputs::corpus_injection_texts(&root) {
        tally.add(t, name);
        // In corpus order: each text read with the memo warm from the one before.
        warm_equals_cold(t, name);
    }
    eprintln!(
        "corpus injections: fast path read {} of {} texts",
        tally.taken, tally.seen
    );
    assert!(tally.seen > 0);
    assert!(
        tally.taken * 10 > tally.seen * 8,
        "fast path gave up on too many texts"
    );
}

/// Template-like seeds for the mutations.
const SEEDS: &[&str] = &[
    "metadata:\n  labels:\n    app: \"hello\"\n    v: 1\n  annotations: {\n    a: \"x\",\n    b: y,\n  }\nspec:\n  containers:\n  - name: c\n    image: \"i:1\"\n    args:\n    - a\n    -  \"b\" \n    - --x=y:z\n    ports:\n    - containerPort: 80\n      protocol: TCP\n    env:\n    - name: X\n      value: |\n        {}\n    - name: Y\n      value: |-\n        [\n          {\"a\":1}\n        ]\n    # comment\n    - name: Z\n      valueFrom:\n        fieldRef:\n          fieldPath: status.podIP\n  volumes:\n  - emptyDir:\n    name: v\n  - emptyDir: {}\n    name: w\n",
    "a: 1\nb: yes\nc: 0x1F\nd: 1.5\ne: ~\nf: 'q''s'\ng: \"e\\n\\t\"\nh: [1, 'two', {t: 3}]\ni:\n- - x\n  - y\n- k: v\n  l: |+\n    keep\n\n",
    "key:\n- a\n- b: c\n  d:\n  - e\nz: url://h:80/p # c\n",
];

/// One random edit: delete, duplicate or re-indent a line, or substitute, insert or delete a
/// character (drawn from YAML's syntax characters most of the time).
fn mutate(text: &str, rng: &mut XorShift) -> String {
    const CHARS: &[u8] = b" \n:-#'\"|>+[]{},&*!?%@`\\\t\r0aZ.~";
    let mut lines: Vec<String> = text.split('\n').map(str::to_string).collect();
    let i = rng.below(lines.len());
    match rng.below(6) {
        0 => {
            lines.remove(i);
        }
        1 => {
            let l = lines[i].clone();
            lines.insert(i, l);
        }
        2 => {
            let n = rng.below(4);
            lines[i] = format!("{}{}", " ".repeat(n), lines[i].trim_start());
        }
        3 => {
            let n = rng.below(3) + 1;
            lines[i] = format!("{}{}", " ".repeat(n), lines[i]);
        }
        _ => {
            let mut bytes: Vec<char> = lines[i].chars().collect();
            let at = rng.below(bytes.len() + 1);
            let c = if rng.below(10) == 0 {
                'é'
            } else {
                char::from(CHARS[rng.below(CHARS.len())])
            };
            match rng.below(3) {
                0 if at < bytes.len() => bytes[at] = c,
                1 if at < bytes.len() => {
                    bytes.remove(at);
                }
                _ => bytes.insert(at, c),
            }
            lines[i] = bytes.into_iter().collect();
        }
    }
    lines.join("\n")
}

/// Randomised differential test: thousands of mutated template-like texts; the fast path either
/// gives up or agrees with the full loader.
fn random_mutations_agree_or_give_up() {
    // `YAML_FAST_MUTATIONS=N` runs N mutations per seed (a longer local soak).
    let per_seed: usize = std::env::var("YAML_FAST_MUTATIONS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(3000);
    let mut rng = XorShift(0x5EED_CAFE_F00D_1234);
    let (mut seen, mut taken) = (0, 0);
    for seed in SEEDS {
        assert!(check(seed, "seed"), "fast path gave up on a seed:\n{seed}");
        for _ in 0..per_seed {
            let mut text = seed.to_string();
            for _ in 0..=rng.below(4) {
                text = mutate(&text, &mut rng);
            }
            seen += 1;
            taken += usize::from(check(&text, "mutation"));
        }
    }
    eprintln!("mutations: fast path read {taken} of {seen}");
    assert!(
        taken > seen / 10,
        "fast path gave up on almost every mutation"
    );
}

fn main() {
    harness::run(vec![
        harness::trial(
            "corpus_files_and_their_emitted_trees",
            &[harness::Need::Corpus],
            corpus_files_and_their_emitted_trees,
        ),
        harness::trial(
            "rendered_templates_take_the_fast_path",
            &[harness::Need::Corpus],
            rendered_templates_take_the_fast_path,
        ),
        harness::trial(
            "rendered_templates_of_distinct_pods_warm_equal_cold",
            &[harness::Need::Corpus],
            rendered_templates_of_distinct_pods_warm_equal_cold,
        ),
        harness::trial(
            "corpus_injections",
            &[harness::Need::Corpus],
            corpus_injections,
        ),
        harness::trial(
            "random_mutations_agree_or_give_up",
            &[],
            random_mutations_agree_or_give_up,
        ),
    ]);
}
