//! `bench-tool report DIR OUT`: `docs/PERFORMANCE.md` from the results
//! `benches/run.sh` left in DIR. The prose is `benches/report.md.tmpl`, a
//! minijinja template; this module computes each value the template names
//! from the run's figures, looked up by their names (`group/name`). Nothing
//! here is a number of its own.
//!
//! The report is written only when complete: a figure the template needs
//! and the run did not produce (a failed or renamed benchmark) makes it
//! fail with the name of every such figure, and so does a value that the
//! template does not use or a name it uses that has no value.
//!
//! - `results`: the run's files, read once, every absence remembered;
//! - `format`: times, ratios and shares as text;
//! - `in_process`: the sections measured in one process (per request, per
//!   kind, latency, stages, peers);
//! - `hosts`: cold start, the host's own bench, HTTP, module sizes.

mod format;
mod hosts;
mod in_process;
mod results;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use minijinja::{Environment, Value};
use results::{Missing, Results};

/// The report's prose, with its placeholders.
const TEMPLATE: &str = include_str!("../../report.md.tmpl");

/// The bench file or tool that measures each group of figures: what the
/// report quotes as the command that reproduces a figure.
const TOOLS: [(&str, &str); 11] = [
    ("per_request/native", "native"),
    ("stages/native", "native"),
    ("per_request/wasmtime", "wasm"),
    ("per_kind/wasmtime_reuse", "wasm"),
    ("stages/wasmtime", "wasm"),
    ("stages/native_by_difference", "wasm"),
    ("cold/wasmtime", "wasm"),
    ("per_token/native", "peers"),
    ("per_request/microservice", "peers"),
    ("interleaved", "paired"),
    ("node", "node"),
];

/// The criterion settings the quoted commands use (`benches/run.sh`'s defaults).
const CRITERION_ARGS: &str = "--warm-up-time 1 --measurement-time 2";

/// The command that measures the figure or group `id` (alone, for criterion).
fn command(id: &str) -> Option<String> {
    let (group, tool) = TOOLS.iter().find(|(g, _)| id == *g || id.starts_with(&format!("{g}/")))?;
    Some(match *tool {
        "paired" => "`target/release/bench-tool paired out.json`".into(),
        "node" => "`target/release/bench-tool corpus c.json && node benches/node/bench.mjs c.json dist/gateway.wasm out.json`".into(),
        bench => {
            let filter = if id == *group { format!("{id}/") } else { id.to_owned() };
            format!("`cargo bench -p gateway-benches --bench {bench} -- {CRITERION_ARGS} '{filter}'`")
        }
    })
}

/// Why no report was written.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// Figures the report needs that the run did not produce.
    #[error("{} figure(s) the report needs are missing from the results:\n  {}", .0.len(), list(.0))]
    Missing(Vec<Missing>),
    /// The template does not parse, or names a value that has none.
    #[error("benches/report.md.tmpl: {0:#}")]
    Template(#[from] minijinja::Error),
    /// Values the template does not use: computed for nothing.
    #[error("benches/report.md.tmpl does not use: {}", .0.join(", "))]
    Unused(Vec<String>),
    /// The report could not be written.
    #[error("{}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

fn list(missing: &[Missing]) -> String {
    missing.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n  ")
}

/// Writes the report for the results in `dir` to `out`.
pub fn run(dir: &Path, out: &Path) -> ExitCode {
    let results = Results::load(dir);
    let written = render(&results).and_then(|markdown| {
        std::fs::write(out, markdown).map_err(|source| ReportError::Write { path: out.to_owned(), source })
    });
    match written {
        Ok(()) => {
            eprintln!("wrote {}", out.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The report for `results`, or everything that keeps it from being complete.
pub fn render(r: &Results) -> Result<String, ReportError> {
    let mut env = Environment::new();
    env.set_keep_trailing_newline(true);
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    env.add_function("cmd", |id: &str| {
        command(id).ok_or_else(|| {
            minijinja::Error::new(minijinja::ErrorKind::InvalidOperation, format!("no command for {id:?}"))
        })
    });
    env.add_template("report.md", TEMPLATE)?;
    let template = env.get_template("report.md")?;

    let mut v = Values::default();
    let mut machine = BTreeMap::new();
    for name in template.undeclared_variables(true) {
        if let Some(key) = name.strip_prefix("machine.") {
            machine.insert(key.to_owned(), r.machine(key));
        }
    }
    in_process::header(&mut v, r);
    in_process::summary(&mut v, r);
    in_process::per_request(&mut v, r);
    in_process::per_kind(&mut v, r);
    in_process::bound_tokens(&mut v, r);
    in_process::latency(&mut v, r);
    in_process::stages(&mut v, r);
    in_process::peers(&mut v, r);
    hosts::cold_start(&mut v, r);
    hosts::host_bench(&mut v, r);
    hosts::http(&mut v, r);
    hosts::sizes(&mut v, r);
    hosts::fetched_keys(&mut v, r);
    hosts::rules(&mut v, r);
    let missing = r.take_missing();
    if !missing.is_empty() {
        return Err(ReportError::Missing(missing));
    }
    let used = template.undeclared_variables(false);
    let unused: Vec<String> = v.0.keys().filter(|k| !used.contains(*k)).cloned().collect();
    if !unused.is_empty() {
        return Err(ReportError::Unused(unused));
    }
    let mut context: BTreeMap<String, Value> = v.0.into_iter().map(|(k, v)| (k, Value::from(v))).collect();
    context.insert("machine".into(), Value::from(machine));
    Ok(template.render(context)?)
}

/// The template's values, by name.
#[derive(Default)]
struct Values(BTreeMap<String, String>);

impl Values {
    fn set(&mut self, name: &str, value: impl Into<String>) {
        let previous = self.0.insert(name.to_owned(), value.into());
        assert!(previous.is_none(), "{name} is set twice");
    }
}

#[cfg(test)]
mod tests {
    use gateway_benches::latency::Series;

    use super::results::{HTTP_STEP, NODE_STEP};
    use super::*;

    /// Fills `results` with a stand-in for everything found missing.
    fn supply(results: &mut Results, missing: &[Missing]) {
        for m in missing {
            match m {
                Missing::Figure(name) => {
                    results.figures.insert(name.clone(), 1234.0);
                }
                Missing::Machine(key) => {
                    results.machine.insert(key.clone(), format!("<{key}>"));
                }
                Missing::File("corpus.json") => {
                    results.corpus = Some(results::Corpus {
                        kinds: vec!["valid".into(), "no_token".into()],
                        ..Default::default()
                    });
                }
                Missing::File("latency.json") => {
                    let h = gateway_benches::latency::histogram();
                    results.latency.push(Series::of("per_request", "native rlib", &h));
                }
                Missing::File("node.json") => {
                    let h = gateway_benches::latency::histogram();
                    results.latency.push(Series::of("per_request", "node: wasm reuse", &h));
                }
                Missing::File(name) => {
                    results.texts.insert(name, "a|b|1.00 0.10 0.90 hyperfine|2048\n".into());
                }
            }
        }
    }

    #[test]
    fn commands_name_the_bench_file_and_the_filter() {
        let bench = |file: &str, filter: &str| {
            Some(format!("`cargo bench -p gateway-benches --bench {file} -- {CRITERION_ARGS} '{filter}'`"))
        };
        assert_eq!(command("per_request/native/mix"), bench("native", "per_request/native/mix"));
        assert_eq!(command("stages/native"), bench("native", "stages/native/"));
        assert_eq!(command("stages/native_by_difference"), bench("wasm", "stages/native_by_difference/"));
        assert_eq!(command("interleaved/reuse"), Some("`target/release/bench-tool paired out.json`".into()));
        assert_eq!(command("per_request"), None);
    }

    #[test]
    fn every_missing_figure_is_named_and_a_complete_run_fills_the_template() {
        let mut results = Results::default();
        let Err(ReportError::Missing(missing)) = render(&results) else {
            panic!("an empty run is complete? {:?}", render(&results))
        };
        let names: Vec<String> = missing.iter().map(ToString::to_string).collect();
        for expected in [
            "per_request/native/mix",
            "per_request/wasmtime/reuse_deadline",
            "cold/wasmtime/first_instantiate",
            "node/js_mix",
        ] {
            assert!(names.iter().any(|n| n == expected), "{expected} not named");
        }
        for expected in
            ["interleaved/reuse/jit_deadline", "per_kind/wasmtime_reuse/bad_signature", "machine.env: date"]
        {
            assert!(names.iter().any(|n| n == expected), "{expected} not named");
        }

        // With every figure there, the template is filled: no placeholder
        // without a value, no value without a placeholder.
        supply(&mut results, &missing);
        let report = render(&results).expect("a complete run gives a report");
        assert!(!report.contains("{{"), "a placeholder is left");
        assert!(report.contains("| native rlib | function call | 1.23 µs |"));
    }

    #[test]
    fn one_missing_benchmark_fails_the_report_with_its_name() {
        let mut results = Results::default();
        let Err(ReportError::Missing(missing)) = render(&results) else { panic!("incomplete") };
        supply(&mut results, &missing);
        results.figures.remove("per_request/wasmtime/fresh_on_demand_deadline");
        match render(&results) {
            Err(ReportError::Missing(missing)) => {
                assert_eq!(
                    missing,
                    vec![Missing::Figure("per_request/wasmtime/fresh_on_demand_deadline".into())]
                );
            }
            other => panic!("expected the missing benchmark, got {other:?}"),
        }
    }

    #[test]
    fn a_skipped_step_reads_skipped_instead_of_missing() {
        let mut results = Results::default();
        results.skipped.insert(NODE_STEP.into());
        results.skipped.insert(HTTP_STEP.into());
        let Err(ReportError::Missing(missing)) = render(&results) else { panic!("incomplete") };
        assert!(!missing.iter().any(|m| m.to_string().starts_with("node")), "{missing:?}");
        supply(&mut results, &missing);
        let report = render(&results).expect("complete");
        assert!(report.contains("| Node.js WebAssembly (V8) | reuse | skipped |"));
        assert!(report.contains("the HTTP step was skipped"));
    }
}
