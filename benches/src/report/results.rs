//! The results `benches/run.sh` leaves in one directory, read once, and
//! looked up by name. Every lookup of something absent is remembered, so the
//! report can refuse to be written and name everything that is missing.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::Path;

use gateway_benches::latency::Series;
use serde_json::Value;

/// Steps `benches/run.sh` can skip (`BENCH_SKIP`): what they measure is
/// reported as skipped, not missing.
pub const NODE_STEP: &str = "node";
/// The HTTP step (servers under load, wrk).
pub const HTTP_STEP: &str = "http";

/// Something the report needs that the run did not produce.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Missing {
    /// A figure: a benchmark id, or `sizes/...`, `host_bench/...`.
    Figure(String),
    /// A line of `machine.env`.
    Machine(String),
    /// A whole file of the results directory.
    File(&'static str),
}

impl fmt::Display for Missing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Missing::Figure(name) => write!(f, "{name}"),
            Missing::Machine(key) => write!(f, "machine.env: {key}"),
            Missing::File(name) => write!(f, "{name} (missing or empty)"),
        }
    }
}

/// The corpus' description, from `corpus.json`.
#[derive(Debug, Clone, Default)]
pub struct Corpus {
    /// The clock the in-process rows pass.
    pub now: u64,
    /// The mix's seed.
    pub seed: u64,
    /// The mix's request kinds, in order.
    pub kinds: Vec<String>,
    /// The mean length of the mix's heads, bytes.
    pub mean_head_bytes: f64,
    /// The length of the valid case's token.
    pub token_bytes: usize,
    /// The length of the valid token's signing input.
    pub signing_input_bytes: usize,
}

/// Everything one run measured.
#[derive(Debug, Default)]
pub struct Results {
    /// `machine.env`.
    pub machine: BTreeMap<String, String>,
    /// The steps skipped (`skipped=` in `machine.env`).
    pub skipped: BTreeSet<String>,
    /// Every figure by name: criterion's means and `bench-tool paired`'s
    /// figures as `group/name`, Node.js rows as `node/<row>`, the host's bench
    /// as `host_bench/<wasm|cwasm>/<json path>`, sizes as `sizes/<variant>/<bytes|gzip>`.
    pub figures: BTreeMap<String, f64>,
    /// The latency series of `bench-tool latency` and Node.js.
    pub latency: Vec<Series>,
    /// The HTTP series of `bench-tool load`.
    pub http: Vec<Series>,
    /// Text files by name: `http-notes.txt`, `cold-process.txt`.
    pub texts: BTreeMap<&'static str, String>,
    /// `corpus.json`, digested.
    pub corpus: Option<Corpus>,
    missing: RefCell<BTreeSet<Missing>>,
}

fn read_json(path: &Path) -> Option<Value> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

/// Every `benchmark.json` under `dir` from criterion's latest run (`new/`).
fn criterion_files(dir: &Path, found: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            criterion_files(&path, found);
        } else if path.file_name().is_some_and(|n| n == "benchmark.json")
            && path.parent().is_some_and(|p| p.ends_with("new"))
        {
            found.push(path);
        }
    }
}

/// Numbers of a JSON value by path (`a/b/c`), into `out` under `prefix`.
fn flatten(value: &Value, prefix: &str, out: &mut BTreeMap<String, f64>) {
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                flatten(v, &format!("{prefix}/{key}"), out);
            }
        }
        Value::Number(n) => {
            if let Some(x) = n.as_f64() {
                out.insert(prefix.to_owned(), x);
            }
        }
        _ => {}
    }
}

fn corpus(value: &Value) -> Option<Corpus> {
    let mix = value["mix"].as_array()?;
    let heads: Vec<usize> = mix.iter().filter_map(|r| r["head"].as_str().map(str::len)).collect();
    let token = value["cases"].as_array()?.first()?["token"].as_str()?;
    Some(Corpus {
        now: value["now"].as_u64()?,
        seed: value["seed"].as_u64()?,
        kinds: mix.iter().map(|r| r["name"].as_str().map(str::to_owned)).collect::<Option<_>>()?,
        mean_head_bytes: heads.iter().sum::<usize>() as f64 / heads.len().max(1) as f64,
        token_bytes: token.len(),
        signing_input_bytes: token.rfind('.')?,
    })
}

impl Results {
    /// Reads the results in `dir`. Nothing is required here: absences are
    /// noticed when the report asks.
    pub fn load(dir: &Path) -> Results {
        let text = |name: &str| std::fs::read_to_string(dir.join(name)).ok();
        let machine: BTreeMap<String, String> = text("machine.env")
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.split_once('=').map(|(k, v)| (k.to_owned(), v.to_owned())))
            .collect();
        let skipped = machine.get("skipped").map(|s| s.split_whitespace().map(str::to_owned).collect());
        let mut figures = BTreeMap::new();

        let mut files = Vec::new();
        criterion_files(&dir.join("criterion"), &mut files);
        for file in files {
            let (Some(bench), Some(estimates)) =
                (read_json(&file), read_json(&file.with_file_name("estimates.json")))
            else {
                continue;
            };
            if let (Some(id), Some(mean)) =
                (bench["full_id"].as_str(), estimates["mean"]["point_estimate"].as_f64())
            {
                figures.insert(id.to_owned(), mean);
            }
        }
        if let Some(Value::Object(paired)) = read_json(&dir.join("paired.json")) {
            figures.extend(paired.iter().filter_map(|(k, v)| Some((k.clone(), v.as_f64()?))));
        }
        let node = read_json(&dir.join("node.json"));
        // The Node.js rows: the request mix, and tokens bound to their sender.
        for rows in [
            node.as_ref().map(|n| n["rows"].clone()),
            read_json(&dir.join("node-dpop.json")).map(|n| n["rows"].clone()),
        ] {
            if let Some(Value::Object(rows)) = rows {
                figures.extend(rows.iter().filter_map(|(k, v)| Some((format!("node/{k}"), v.as_f64()?))));
            }
        }
        for which in ["wasm", "cwasm"] {
            if let Some(json) = read_json(&dir.join(format!("host-bench-{which}.json"))) {
                flatten(&json, &format!("host_bench/{which}"), &mut figures);
            }
        }
        for line in text("sizes.txt").unwrap_or_default().lines() {
            let parts: Vec<&str> = line.split_whitespace().collect();
            if let [name, bytes, gzip] = parts[..] {
                for (what, v) in [("bytes", bytes), ("gzip", gzip)] {
                    if let Ok(v) = v.parse() {
                        figures.insert(format!("sizes/{name}/{what}"), v);
                    }
                }
            }
        }

        let series = |value: Option<Value>| -> Vec<Series> {
            value.and_then(|v| serde_json::from_value(v).ok()).unwrap_or_default()
        };
        let mut latency = series(read_json(&dir.join("latency.json")));
        latency.extend(series(node.map(|n| n["series"].clone())));
        let texts = ["http-notes.txt", "cold-process.txt"]
            .into_iter()
            .filter_map(|name| Some((name, text(name)?)))
            .collect();
        Results {
            skipped: skipped.unwrap_or_default(),
            machine,
            figures,
            latency,
            http: series(read_json(&dir.join("http.json"))),
            texts,
            corpus: read_json(&dir.join("corpus.json")).as_ref().and_then(corpus),
            missing: RefCell::default(),
        }
    }

    /// Notes that `what` is missing.
    pub fn miss(&self, what: Missing) {
        self.missing.borrow_mut().insert(what);
    }

    /// Everything asked for and not found since the last call, in order.
    pub fn take_missing(&self) -> Vec<Missing> {
        std::mem::take(&mut *self.missing.borrow_mut()).into_iter().collect()
    }

    /// True when `benches/run.sh` skipped `step`.
    pub fn skipped(&self, step: &str) -> bool {
        self.skipped.contains(step)
    }

    /// The figure named `name` (see [`Results::figures`]); None (and noted
    /// as missing) when the run did not produce it, None alone when its step
    /// was skipped.
    pub fn get(&self, name: impl AsRef<str>) -> Option<f64> {
        let name = name.as_ref();
        if name.starts_with("node/") && self.skipped(NODE_STEP) {
            return None;
        }
        let value = self.figures.get(name).copied();
        if value.is_none() {
            self.miss(Missing::Figure(name.to_owned()));
        }
        value
    }

    /// A line of `machine.env`; noted as missing when absent.
    pub fn machine(&self, key: &str) -> String {
        self.machine.get(key).cloned().unwrap_or_else(|| {
            self.miss(Missing::Machine(key.to_owned()));
            String::new()
        })
    }

    /// A text file; noted as missing when absent or empty.
    pub fn text(&self, name: &'static str) -> &str {
        match self.texts.get(name).map(String::as_str) {
            Some(text) if !text.trim().is_empty() => text,
            _ => {
                self.miss(Missing::File(name));
                ""
            }
        }
    }

    /// The corpus' description; noted as missing when absent.
    pub fn corpus(&self) -> Corpus {
        self.corpus.clone().unwrap_or_else(|| {
            self.miss(Missing::File("corpus.json"));
            Corpus::default()
        })
    }
}
