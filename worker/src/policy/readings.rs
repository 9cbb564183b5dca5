//! Readings: how the servers behind the gateway may read a request, so that
//! a rule holds for every one of them, not only for a server that reads
//! the path and method exactly as the gateway does.
//!
//! The target phase already forwards the one reading every server agrees
//! on where it can (dot segments removed, empty segments merged, unreserved
//! escapes decoded, double encodings and lower-case methods refused). What
//! is left differs by server, and an attacker picks the reading that dodges
//! a rule:
//!
//! | reading | servers | example |
//! |---|---|---|
//! | `;` parameters stripped, then empty segments merged | Tomcat, Jetty, Spring | `/admin;x/users`, `/;x/internal` |
//! | `;` read as the start of the query | Fastify 4 (`useSemicolonDelimiter`) | `/account/export;/x` |
//! | paths in any letter case | Express, ASP.NET Core | `/ADMIN/users` |
//! | a trailing slash ignored | Express, ASP.NET Core, Spring MVC before 6 | `/account/export/` |
//! | a `.ext` suffix ignored | Spring MVC's suffix patterns | `/account/export.csv` |
//! | `HEAD` answered by the `GET` handler | Flask, Express, Spring, Go | `HEAD /admin` |
//! | a method-override header, `_method` in the query (form-decoded) | Express `method-override`, ASP.NET Core, Laravel, Symfony, Hono | `X-HTTP-Method-Override: DELETE`, `?_m%65thod=DELETE` |
//! | `_method` in a form body, from any method with a body | Rails, Laravel, Symfony (POST), Hono (any but GET) | `PUT /orders/5` with `_method=DELETE` |
//!
//! The request is judged by the rule its own reading meets; every other
//! reading must meet that same rule, or the request is refused (400), so no
//! server behind the gateway serves it under a rule it did not pass. The
//! readings a config expects are in [`Readings`] (all of them unless the
//! config says an upstream never reads a request that way).
//!
//! A `_method` in a body is out of the gateway's sight: a request whose
//! head frames content may carry one to any method a rule names. Such a
//! request is judged by its own rule and by every rule those methods meet
//! at its path ([`FormReach`]): it passes only with what all of them ask
//! (a deny among them, or a token rule behind a public one, refuses it).
//! A method no rule names at that path is not judged so: the rules name
//! what the upstreams serve.
//!
//! Readings that only widen what a rule matches (case, trailing slash,
//! suffix) are tried together: matching with all of them at once finds the
//! earliest rule any of their combinations meets, so when that is the
//! request's own rule, so is every combination's. Readings that replace the
//! path or the method (parameters stripped, another method) are tried one
//! by one.

use crate::arena::Arena;
use crate::config::{PathMatch, Readings, Rule};
use crate::http::forward::canonical_eq;
use crate::http::has_byte;
use crate::http::request::{Head, trim_ows};
use crate::http::target::parameters_start;
use crate::reject::Rejection;

/// Method-override fields, as frameworks name them (compared with `_` as `-`).
const OVERRIDE_FIELDS: [&[u8]; 3] = [b"x-http-method-override", b"x-http-method", b"x-method-override"];

/// How a rule's path is compared with a request's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Widening {
    /// Letters in any case.
    any_case: bool,
    /// One trailing slash, on the path or the rule, ignored.
    trailing_slash: bool,
    /// A `.ext` at the end of the path's last segment ignored, where the
    /// rule's last segment has no `.` (Spring's suffix patterns).
    suffix: bool,
}

/// Exactly as the rule is written.
const EXACT: Widening = Widening { any_case: false, trailing_slash: false, suffix: false };

/// The index of the first rule for `method` and the normalized `path`, and
/// checks that every reading of the request meets that same rule.
pub fn first_rule(
    rules: &[Rule<'_>],
    readings: &Readings,
    head: &Head<'_, '_>,
    path: &[u8],
    arena: &mut Arena<'_>,
) -> Result<(Option<usize>, FormReach), Rejection> {
    let method = head.method.as_bytes();
    let own = first(rules, method, path, EXACT);
    let widening = widening_for(readings, path);
    // The path's other readings: `;` parameters stripped (Tomcat), and the
    // path cut at the first `;` (Fastify 4, which reads the rest as the query).
    let first_parameters =
        readings.path_parameters.then(|| (0..path.len()).position(|at| parameters_start(path, at)));
    let [stripped, cut] = match first_parameters.flatten() {
        Some(at) => {
            let stripped = strip_parameters(path, arena)?;
            let cut = &path[..at];
            [Some((stripped, widening_for(readings, stripped))), Some((cut, widening_for(readings, cut)))]
        }
        None => [None, None],
    };
    // The first rule `method` meets in each reading of the path but its own.
    let others = |method: &[u8]| {
        let another = method != head.method.as_bytes() || widening != EXACT;
        [
            another.then(|| first(rules, method, path, widening)),
            stripped.map(|(stripped, widening)| first(rules, method, stripped, widening)),
            cut.map(|(cut, widening)| first(rules, method, cut, widening)),
        ]
    };
    let mut differs = |method: &[u8]| others(method).iter().flatten().any(|&rule| rule != own);
    if differs(method) {
        return Err(Rejection::PathReadsAnotherRule);
    }
    // Servers answer HEAD with the GET handler.
    let mut overridden = head.method == "HEAD" && differs(b"GET");
    if readings.method_override {
        overridden |= any_override(head, arena, &mut differs)?;
    }
    if overridden {
        return Err(Rejection::MethodReadsAnotherRule);
    }
    let mut reach = FormReach::default();
    if readings.method_override && head.has_content() {
        for (i, rule) in rules.iter().enumerate() {
            for (j, named) in rule.methods.iter().enumerate() {
                let named = named.as_bytes();
                // Each method once: where a rule (or this one) named it first.
                let earlier = rules[..i].iter().flat_map(|r| r.methods).chain(&rule.methods[..j]);
                if earlier.clone().any(|m| m.as_bytes() == named) {
                    continue;
                }
                let exact = first(rules, named, path, EXACT);
                for rule in others(named).into_iter().flatten().chain([exact]).flatten() {
                    if Some(rule) != own {
                        reach.add(rule)?;
                    }
                }
            }
        }
    }
    Ok((own, reach))
}

/// The most rules a form body's `_method` may make one request meet besides
/// its own; a request that could meet more is refused.
const MAX_FORM_REACH: usize = 8;

/// The rules (by index) a request with a body could meet through a
/// `_method` in that body, besides the rule of its own method: it must pass
/// each of them too.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FormReach {
    rules: [u16; MAX_FORM_REACH],
    len: u8,
}

impl FormReach {
    /// The rules, each once.
    pub fn rules(&self) -> &[u16] {
        &self.rules[..usize::from(self.len)]
    }

    fn add(&mut self, rule: usize) -> Result<(), Rejection> {
        let rule = u16::try_from(rule).map_err(|_| Rejection::MethodReadsAnotherRule)?;
        if !self.rules().contains(&rule) {
            *self.rules.get_mut(usize::from(self.len)).ok_or(Rejection::MethodReadsAnotherRule)? = rule;
            self.len += 1;
        }
        Ok(())
    }
}

/// The readings `path` (or the rules) can make another rule's: letters in
/// any case where there is an upper-case letter, a trailing slash where one
/// ends the path or an exact rule, a suffix where the last segment (before
/// a trailing slash, which Spring ignores too) has a dot. Most paths need
/// none, and skip the widened pass.
fn widening_for(readings: &Readings, path: &[u8]) -> Widening {
    let unslashed = path.strip_suffix(b"/").unwrap_or(path);
    let last_segment = &unslashed[unslashed.iter().rposition(|&b| b == b'/').unwrap_or(0)..];
    Widening {
        any_case: readings.any_case
            && (readings.rules_have_upper_case || path.iter().any(u8::is_ascii_uppercase)),
        trailing_slash: readings.trailing_slash
            && (readings.exact_rules_end_with_slash || (path.len() > 1 && path.last() == Some(&b'/'))),
        suffix: readings.suffix && has_byte(last_segment, b'.'),
    }
}

/// The first rule whose methods hold `method` and whose path matches
/// `path` under `widening`. Methods compare in any case: a request's own is
/// upper case (the target phase refuses another), and frameworks upper-case
/// an override's value.
fn first(rules: &[Rule<'_>], method: &[u8], path: &[u8], widening: Widening) -> Option<usize> {
    rules.iter().position(|rule| {
        (rule.methods.is_empty() || rule.methods.iter().any(|m| m.as_bytes().eq_ignore_ascii_case(method)))
            && path_matches(rule.path, path, widening)
    })
}

/// True when `rule` matches `path` under `widening`. A prefix matches on a
/// segment boundary: `/admin` matches `/admin`, `/admin/` and `/admin/x`.
fn path_matches(rule: PathMatch<'_>, path: &[u8], widening: Widening) -> bool {
    let (mut text, prefix) = match rule {
        PathMatch::Exact(exact) => (exact.as_bytes(), false),
        PathMatch::Prefix(prefix) => (prefix.strip_suffix('/').unwrap_or(prefix).as_bytes(), true),
    };
    if widening.trailing_slash && !prefix && text.len() > 1 {
        text = text.strip_suffix(b"/").unwrap_or(text);
    }
    let Some(start) = path.get(..text.len()) else { return false };
    let same = match widening.any_case {
        true => start.eq_ignore_ascii_case(text),
        false => start == text,
    };
    if !same {
        return false;
    }
    let rule_segment = &text[text.iter().rposition(|&b| b == b'/').map_or(0, |i| i + 1)..];
    match &path[text.len()..] {
        [] => true,
        [b'/', ..] if prefix => true,
        b"/" => widening.trailing_slash,
        [b'.', extension @ ..] => {
            let extension = match widening.trailing_slash {
                true => extension.strip_suffix(b"/").unwrap_or(extension),
                false => extension,
            };
            widening.suffix && !has_byte(rule_segment, b'.') && !has_byte(extension, b'/')
        }
        _ => false,
    }
}

/// True when `differs` for a method an override names: the values of the
/// override fields (each comma-separated item), and `_method` in the query,
/// its name and value read as a form decodes them ([`form_decode`]).
#[inline(never)]
fn any_override(
    head: &Head<'_, '_>,
    arena: &mut Arena<'_>,
    differs: &mut dyn FnMut(&[u8]) -> bool,
) -> Result<bool, Rejection> {
    for field in head.fields {
        if is_override_field(field.name.as_bytes())
            && field.value.split(|&b| b == b',').any(|m| differs(trim_ows(m)))
        {
            return Ok(true);
        }
    }
    let Some(at) = head.target.iter().position(|&b| b == b'?') else { return Ok(false) };
    for pair in head.target[at + 1..].split(|&b| b == b'&' || b == b';') {
        let equals = pair.iter().position(|&b| b == b'=').unwrap_or(pair.len());
        let (name, value) = pair.split_at(equals);
        if !is_method_parameter(form_decode(name, arena)?) {
            continue;
        }
        let value = form_decode(value.get(1..).unwrap_or_default(), arena)?;
        if differs(value.trim_ascii()) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// `text` as a form decodes it (WHATWG `application/x-www-form-urlencoded`):
/// `+` is a space, each `%XY` its byte, a broken escape kept as written.
fn form_decode<'a>(text: &[u8], arena: &mut Arena<'a>) -> Result<&'a [u8], Rejection> {
    let out = arena.alloc(text.len())?;
    let (mut i, mut len) = (0, 0);
    while let Some(&b) = text.get(i) {
        let hex = |at: usize| text.get(at).and_then(|&d| (d as char).to_digit(16));
        out[len] = match (b, hex(i + 1), hex(i + 2)) {
            (b'+', ..) => b' ',
            (b'%', Some(hi), Some(lo)) => {
                i += 2;
                (hi * 16 + lo) as u8
            }
            _ => b,
        };
        len += 1;
        i += 1;
    }
    let decoded: &'a [u8] = out;
    Ok(&decoded[..len])
}

/// True when a decoded query name reads as `_method`: exactly, or as PHP
/// reads names (leading spaces dropped, then `.` or `[` read as `_`),
/// which Laravel and Symfony then read `_method` from.
fn is_method_parameter(name: &[u8]) -> bool {
    let name = &name[name.iter().position(|&b| b != b' ').unwrap_or(name.len())..];
    matches!(name, [b'_' | b'.' | b'[', rest @ ..] if rest == b"method")
}

/// True when `name` is a method-override field's, compared lower-cased
/// with `_` read as `-`.
#[inline(never)]
fn is_override_field(name: &[u8]) -> bool {
    OVERRIDE_FIELDS.iter().any(|known| canonical_eq(name, known))
}

/// `path` as a server that strips `;` parameters reads it: each segment's
/// parameters (raw or encoded) left out up to the next `/`, and then the
/// empty segments that leaves merged (`/;x/internal` is `/internal`).
#[inline(never)]
fn strip_parameters<'a>(path: &[u8], arena: &mut Arena<'a>) -> Result<&'a [u8], Rejection> {
    let out = arena.alloc(path.len())?;
    let mut len = 0;
    let mut in_parameters = false;
    for (at, &b) in path.iter().enumerate() {
        in_parameters = b != b'/' && (in_parameters || parameters_start(path, at));
        let empty_segment = b == b'/' && len > 0 && out[len - 1] == b'/';
        if !in_parameters && !empty_segment {
            out[len] = b;
            len += 1;
        }
    }
    let stripped: &'a [u8] = out;
    Ok(&stripped[..len])
}

#[cfg(test)]
mod tests;
