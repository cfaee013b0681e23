//! `xunds top`: a live terminal view of running `xunds` processes, laid out
//! as neuron-top's (its user guide, "User interface"):
//!
//! - the title bar: the tool's version, the instance (none offline) and the
//!   processes shown;
//! - NeuronCore utilization: a bar per core and their average, or with `f`
//!   the FLOPS of each; the executions per second and the errors by class
//!   of the period;
//! - vCPU utilization: the system's and the runtimes', user and system;
//! - the memory usage summary by category, host and device;
//! - the memory usage details: a tree (process, core, model, category) with
//!   host and device bytes, each parent the sum of its children, expanded
//!   and collapsed with the arrows and `x`, its position shown when cut;
//! - the tab bar: `all` (every process summed) and one tab per process.
//!
//! Keys: `1`-`9` select a tab, `a`/`d` (or `←`/`→` with the tree
//! collapsed, `Tab`) the previous/next one, `f` toggles utilization and
//! FLOPS, `x` expands or collapses the whole tree, `↑`/`↓` move in the tree
//! and `←`/`→` collapse or expand the selected node, `q`/`Esc`/`Ctrl-C`
//! quit.
//!
//! The screen is a pure function of a [`View`] (the monitor's document of
//! each period) and a [`Ui`] (what the keys chose), so every view is
//! pinned with ratatui's `TestBackend`.

use std::collections::BTreeSet;
use std::io::{IsTerminal, Result};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::layout::Constraint::{Length, Min};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Style, Stylize as _};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Row, Table};
use ratatui::{DefaultTerminal, Frame};

use xunds::nds::reader::ERROR_CLASSES;

use super::engine::Monitor;
use super::report::{
    byte_sum, CoreUse, Document, ExecutionStats, Group, LoadedModel, MemoryUsed, RuntimeEntry,
};

/// A live terminal view of running xunds processes, as neuron-top.
///
/// NeuronCore utilization (or FLOPS), vCPU use, memory by category and a
/// tree of memory by process, core and model, for all processes summed or
/// one at a time. Keys: 1-9 tab, a/d previous/next tab, f FLOPS, x expand
/// or collapse the tree, arrows move in it, q quits.
#[derive(clap::Args, Debug, Clone)]
pub struct TopArgs {
    #[command(flatten)]
    pub slabs: super::SlabArgs,
    /// Refresh period (e.g. 1s, 500ms).
    #[arg(long, default_value = "1s", allow_hyphen_values = true, value_parser = crate::parse_duration)]
    pub period: Duration,
}

/// Everything the screen shows: the monitor's last document, one tab per
/// runtime.
pub type View = Document;

/// Host categories as the summary names them, in the order of
/// [`MemoryUsed::host`].
pub const HOST_KINDS: [&str; 4] = ["App. Memory", "Constants", "DMA Buffers", "Tensors"];
/// Device categories as the summary names them, in the order of
/// [`xunds::nds::reader::CORE_MEMORY`].
pub const DEVICE_KINDS: [&str; 5] = [
    "Constants",
    "Model Code",
    "Model Scratchpad",
    "Runtime Memory",
    "Tensors",
];

/// What the keys chose.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Ui {
    /// 0: all; n: the n-th process.
    pub tab: usize,
    /// FLOPS instead of utilization.
    pub flops: bool,
    /// Expanded tree nodes, by key.
    pub expanded: BTreeSet<String>,
    /// The selected tree row.
    pub selected: usize,
}

/// The processes the selected tab sums.
fn shown<'a>(v: &'a View, ui: &Ui) -> Vec<&'a RuntimeEntry> {
    let all = &v.neuron_runtime_data;
    match ui.tab {
        0 => all.iter().collect(),
        n => all.get(n - 1).into_iter().collect(),
    }
}

/// The runtime's error, or that it has exited ("" when neither).
fn note(p: &RuntimeEntry) -> String {
    match p.state {
        "exited" if p.error.is_empty() => {
            format!("process {} has exited: its final counters", p.pid)
        }
        _ => p.error.clone(),
    }
}

/// `x` in the largest of `units` (each `base` times the one before) that
/// keeps it at least 1, and that unit.
fn scaled(mut x: f64, base: f64, units: [&'static str; 5]) -> (f64, &'static str) {
    let mut u = 0;
    while x >= base && u + 1 < units.len() {
        x /= base;
        u += 1;
    }
    (x, units[u])
}

/// `n` bytes in binary units.
fn bytes(n: u64) -> String {
    match scaled(n as f64, 1024.0, ["B", "KiB", "MiB", "GiB", "TiB"]) {
        (_, "B") => format!("{n} B"),
        (v, unit) => format!("{v:.1} {unit}"),
    }
}

/// A rate with an SI prefix (`12.3k`).
fn si(x: f64) -> String {
    let (v, p) = scaled(x, 1e3, ["", "k", "M", "G", "T"]);
    format!("{v:.1}{p}")
}

fn section(title: String) -> Block<'static> {
    Block::default().borders(Borders::TOP).title(title.bold())
}

/// Draw a section's title over `area`; the area under it.
fn draw_section(f: &mut Frame, area: Rect, title: String) -> Rect {
    let block = section(title);
    let inner = block.inner(area);
    f.render_widget(block, area);
    inner
}

/// A one-line bar: `label [|||||     ] text`, the bar as wide as the line
/// allows.
fn bar(label: &str, ratio: f64, text: &str, width: u16) -> Paragraph<'static> {
    let tw = text.chars().count().max(11);
    let inner = usize::from(width).saturating_sub(10 + 3 + tw + 2).max(4);
    let filled = (ratio.clamp(0.0, 1.0) * inner as f64).round() as usize;
    Paragraph::new(Line::from(vec![
        Span::raw(format!("{label:<10} [")),
        "|".repeat(filled).green(),
        Span::raw(format!("{}] {text:>tw$} ", " ".repeat(inner - filled))),
    ]))
}

/// Draw the view.
pub fn draw(f: &mut Frame, v: &View, ui: &Ui) {
    let procs = shown(v, ui);
    let many = v.neuron_runtime_data.len();
    let cores: Vec<(String, &CoreUse)> = procs
        .iter()
        .flat_map(|p| {
            let used = p.report.neuroncore_counters.iter();
            let used = used.flat_map(|n| &n.neuroncores_in_use);
            used.map(move |(k, c)| match ui.tab {
                0 if many > 1 => (format!("{}/NC{k}", p.pid), c),
                _ => (format!("NC {k}"), c),
            })
        })
        .collect();
    let area = f.area();
    // The cores in as many columns of at least 40 as the width holds, in
    // at most a quarter of the height.
    let cols = usize::from(area.width / 40).clamp(1, cores.len().max(1));
    let most = usize::from(area.height / 4).max(1);
    let rows = cores.len().div_ceil(cols).clamp(1, most);
    let [title, util, vcpu, summary, details, tabs, status] = Layout::vertical([
        Length(1),
        Length(rows as u16 + 2),
        Length(3),
        Length(8),
        Min(3),
        Length(1),
        Length(1),
    ])
    .areas(area);
    let (version, es) = (env!("CARGO_PKG_VERSION"), if many == 1 { "" } else { "es" });
    let title_text =
        format!(" xunds top {version}  |  instance: none (offline)  |  {many} process{es}");
    f.render_widget(Paragraph::new(title_text).white().on_blue(), title);
    draw_utilization(f, util, &procs, &cores, (cols, rows), ui.flops);
    draw_vcpu(f, vcpu, v, &procs);
    draw_summary(f, summary, &procs);
    draw_details(f, details, v, ui);
    draw_tabs(f, tabs, v, ui);
    let note = procs.iter().map(|p| note(p)).find(|n| !n.is_empty());
    let help = "1-9 tab  a/d prev/next  f flops  x expand all  \u{2191}\u{2193}\u{2190}\u{2192} tree  q quit";
    f.render_widget(Paragraph::new(note.unwrap_or(help.into())), status);
}

fn draw_utilization(
    f: &mut Frame,
    area: Rect,
    procs: &[&RuntimeEntry],
    cores: &[(String, &CoreUse)],
    grid: (usize, usize),
    flops: bool,
) {
    let (cols, rows) = grid;
    let stats = procs.iter().flat_map(|p| &p.report.execution_stats);
    let per_s = |e: &Group<ExecutionStats>| match e.execution_summary.get("completed") {
        Some(n) if e.period > 0.0 => *n as f64 / e.period,
        _ => 0.0,
    };
    let rate: f64 = stats.clone().map(per_s).sum();
    // Every summary has every class, in the one order.
    let errors = ERROR_CLASSES.iter().filter_map(|(name, _)| {
        let n: u64 = stats.clone().flat_map(|e| e.error_summary.get(name)).sum();
        (n > 0).then(|| format!("{name} {n}"))
    });
    let errors = Some(errors.collect::<Vec<_>>().join(", ")).filter(|e| !e.is_empty());
    let more = Some(cores.len().saturating_sub(cols * rows)).filter(|m| *m > 0);
    let more = more.map_or(String::new(), |m| format!(" (+{m} more)"));
    let what = if flops { "FLOPS" } else { "Utilization" };
    let (rate, errors) = (si(rate), errors.as_deref().unwrap_or("none"));
    let title = format!("NeuronCore {what}{more} | {rate} executions/s | errors: {errors}");
    let inner = draw_section(f, area, title);
    let n = cores.len().max(1) as f64;
    let avg = |x: fn(&CoreUse) -> f64| cores.iter().map(|c| x(c.1)).sum::<f64>() / n;
    let avg_util = avg(|c| c.neuroncore_utilization);
    let avg_flops = avg(|c| c.flops as f64);
    let peak = cores.iter().map(|c| c.1.flops).max().unwrap_or(0).max(1) as f64;
    let gauge = |label: &str, util: f64, fl: f64, width: u16| {
        if flops {
            bar(label, fl / peak, &format!("{}FLOPS", si(fl)), width)
        } else {
            bar(label, util / 100.0, &format!("{util:.1}%"), width)
        }
    };
    if inner.height == 0 {
        return;
    }
    let line = Rect::new(inner.x, inner.y, inner.width, 1);
    f.render_widget(gauge("average", avg_util, avg_flops, inner.width), line);
    let width = inner.width / cols as u16;
    for (i, (label, c)) in cores.iter().take(cols * rows).enumerate() {
        let x = inner.x + (i / rows) as u16 * width;
        let y = inner.y + 1 + (i % rows) as u16;
        let cell = Rect::new(x, y, width, 1);
        if cell.y < inner.y + inner.height {
            let util = c.neuroncore_utilization;
            f.render_widget(gauge(label, util, c.flops as f64, width), cell);
        }
    }
}

fn draw_vcpu(f: &mut Frame, area: Rect, v: &View, procs: &[&RuntimeEntry]) {
    let sys = v.system_data.vcpu_usage.as_ref();
    let vcpus = sys.map_or(0, |v| v.usage_data.len());
    let inner = draw_section(f, area, format!("vCPU Utilization ({vcpus} vCPUs)"));
    let system = sys.filter(|v| v.error.is_empty()).map(|v| v.user_system());
    // The runtimes' groups read without an error, summed.
    let good = procs
        .iter()
        .flat_map(|p| &p.report.neuron_runtime_vcpu_usage);
    let runtime = good
        .filter(|v| v.error.is_empty())
        .map(|v| (v.vcpu_usage.user, v.vcpu_usage.system))
        .reduce(|(u, s), (u2, s2)| (u + u2, s + s2));
    let lines: [Rect; 2] = Layout::vertical([Length(1); 2]).areas(inner);
    let rows = [("System", system), ("Runtime", runtime)];
    for (line, (label, us)) in lines.into_iter().zip(rows) {
        let text = us.map_or("n/a".into(), |(u, s)| format!("{u:.1}% usr {s:.1}% sys"));
        let (u, s) = us.unwrap_or_default();
        f.render_widget(bar(label, (u + s) / 100.0, &text, inner.width), line);
    }
}

fn draw_summary(f: &mut Frame, area: Rect, procs: &[&RuntimeEntry]) {
    fn add<const N: usize>(sum: &mut [u64; N], xs: &[u64; N]) {
        sum.iter_mut()
            .zip(xs)
            .for_each(|(a, b)| *a = a.saturating_add(*b));
    }
    let (mut host, mut device) = ([0u64; 4], [0u64; 5]);
    for m in procs.iter().filter_map(|p| p.report.memory_used.as_deref()) {
        add(&mut host, &m.host);
        m.cores.iter().for_each(|(_, d)| add(&mut device, d));
    }
    let inner = draw_section(f, area, "Memory Usage Summary".into());
    let [left, right] =
        Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(inner);
    let column = |head: &str, kinds: &[&str], vals: &[u64]| {
        let mut lines = vec![
            Line::raw(head.to_string()).underlined(),
            Line::raw(format!("{:<17}{:>11}", "Total", bytes(byte_sum(vals)))),
        ];
        let rows = kinds.iter().zip(vals);
        lines.extend(rows.map(|(k, v)| Line::raw(format!("{k:<17}{:>11}", bytes(*v)))));
        Paragraph::new(lines)
    };
    f.render_widget(column("Host Used Memory", &HOST_KINDS, &host), left);
    f.render_widget(column("Device Used Memory", &DEVICE_KINDS, &device), right);
}

/// One row of the memory tree.
#[derive(Clone, Debug, PartialEq)]
pub struct TreeRow {
    /// Nesting depth (0 at the top).
    pub depth: usize,
    /// What the row is.
    pub label: String,
    /// A model's id.
    pub model_id: Option<u32>,
    /// Host bytes.
    pub host: u64,
    /// Device bytes.
    pub device: u64,
    /// Its key in [`Ui::expanded`], when it has children.
    pub key: Option<String>,
}

/// The memory tree as shown: every row whose ancestors are expanded. A
/// process (in the `all` tab) holds its cores and the host memory on no
/// core; a core holds its models and what the runtime holds on it outside
/// them; a model holds its device categories. Each parent is the sum of its
/// children.
pub fn tree(v: &View, ui: &Ui) -> Vec<TreeRow> {
    tree_with(v, ui, &|k| ui.expanded.contains(k))
}

/// The tree with the nodes `open` says are expanded.
fn tree_with(v: &View, ui: &Ui, open: &dyn Fn(&String) -> bool) -> Vec<TreeRow> {
    let mut out = Vec::new();
    let mut row = |depth, label, model_id, (host, device), key| {
        out.push(TreeRow {
            depth,
            label,
            model_id,
            host,
            device,
            key,
        });
    };
    let base = usize::from(ui.tab == 0);
    let none = MemoryUsed::default();
    let host = |m: &LoadedModel| byte_sum(m.host());
    for p in shown(v, ui) {
        let pk = format!("p{}", p.pid);
        let mem = p.report.memory_used.as_deref().unwrap_or(&none);
        if ui.tab == 0 {
            let device = byte_sum(mem.cores.iter().map(|(_, d)| byte_sum(d)));
            let bytes = (byte_sum(mem.host), device);
            let label = format!("{} {}", p.pid, p.neuron_runtime_tag);
            row(0, label, None, bytes, Some(pk.clone()));
            if !open(&pk) {
                continue;
            }
        }
        for (core, d) in &mem.cores {
            let ck = format!("{pk}/c{core}");
            let on_core = |m: &&LoadedModel| usize::from(m.record.nc_index) == *core;
            let models: Vec<_> = mem.loaded_models.iter().filter(on_core).collect();
            let bytes = (byte_sum(models.iter().map(|m| host(m))), byte_sum(d));
            row(base, format!("NC {core}"), None, bytes, Some(ck.clone()));
            if !open(&ck) {
                continue;
            }
            for m in &models {
                let (id, device) = (m.record.model_id, m.device());
                let mk = format!("{ck}/m{id}");
                let bytes = (host(m), byte_sum(device));
                let name = m.record.name_str().into_owned();
                row(base + 1, name, Some(id), bytes, Some(mk.clone()));
                if open(&mk) {
                    for (kind, b) in DEVICE_KINDS.iter().zip(device).filter(|(_, b)| *b > 0) {
                        row(base + 2, kind.to_string(), None, (0, b), None);
                    }
                }
            }
            let in_models = byte_sum(models.iter().map(|m| byte_sum(m.device())));
            let outside = byte_sum(d).saturating_sub(in_models);
            row(base + 1, "outside models".into(), None, (0, outside), None);
        }
        let in_models = byte_sum(mem.loaded_models.iter().map(host));
        let on_no_core = byte_sum(mem.host).saturating_sub(in_models);
        row(base, "host, on no core".into(), None, (on_no_core, 0), None);
    }
    out
}

/// Every key the tree could expand (for `x`): those of the whole tree.
fn all_keys(v: &View, ui: &Ui) -> BTreeSet<String> {
    let rows = tree_with(v, ui, &|_| true);
    rows.into_iter().filter_map(|r| r.key).collect()
}

fn draw_details(f: &mut Frame, area: Rect, v: &View, ui: &Ui) {
    let rows = tree(v, ui);
    // The header takes a line under the section's title line.
    let fits = usize::from(area.height.saturating_sub(2)).max(1);
    let selected = ui.selected.min(rows.len().saturating_sub(1));
    let first = selected.saturating_sub(fits - 1);
    let last = (first + fits).min(rows.len());
    let (from, all) = (first + 1, rows.len());
    let position =
        (all > fits).then(|| format!(" [rows {from}-{last} of {all}, \u{2191}\u{2193} to scroll]"));
    let position = position.unwrap_or_default();
    let block = section(format!("Memory Usage Details{position}"));
    let body: Vec<Row> = rows[first..last]
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let mark = match &r.key {
                Some(k) if ui.expanded.contains(k) => "\u{25be} ",
                Some(_) => "\u{25b8} ",
                None => "  ",
            };
            let style = match first + i == selected {
                true => Style::new().reversed(),
                false => Style::new(),
            };
            Row::new(vec![
                format!("{}{mark}{}", "  ".repeat(r.depth), r.label),
                r.model_id.map(|m| m.to_string()).unwrap_or_default(),
                bytes(r.host),
                bytes(r.device),
            ])
            .style(style)
        })
        .collect();
    let table = Table::new(body, [Min(20), Length(9), Length(12), Length(13)])
        .header(Row::new(vec!["", "Model ID", "Host Memory", "Device Memory"]).underlined())
        .block(block);
    f.render_widget(table, area);
}

fn draw_tabs(f: &mut Frame, area: Rect, v: &View, ui: &Ui) {
    let names = std::iter::once("all".to_string()).chain(
        v.neuron_runtime_data
            .iter()
            .map(|p| format!("{} {}", p.pid, p.neuron_runtime_tag)),
    );
    let mut spans = Vec::new();
    for (i, name) in names.enumerate() {
        let (l, r, style) = match i == ui.tab {
            true => ('>', '<', Style::new().green().bold()),
            false => (' ', ' ', Style::new()),
        };
        spans.push(Span::styled(format!("{}:{l}{name}{r} ", i + 1), style));
    }
    if v.neuron_runtime_data.is_empty() {
        spans.push(Span::raw(
            " no running xunds process (no slab found); waiting...",
        ));
    }
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// Apply a key; `false` to quit.
pub fn key(ui: &mut Ui, v: &View, code: KeyCode, mods: KeyModifiers) -> bool {
    let tabs = v.neuron_runtime_data.len() + 1;
    let rows = tree(v, ui);
    let selected = rows.get(ui.selected.min(rows.len().saturating_sub(1)));
    match code {
        KeyCode::Char('q') | KeyCode::Esc => return false,
        KeyCode::Char('c') if mods.contains(KeyModifiers::CONTROL) => return false,
        KeyCode::Char(c @ '1'..='9') if usize::from(c as u8 - b'1') < tabs => {
            (ui.tab, ui.selected) = (usize::from(c as u8 - b'1'), 0);
        }
        KeyCode::Char('a') | KeyCode::BackTab => {
            (ui.tab, ui.selected) = ((ui.tab + tabs - 1) % tabs, 0)
        }
        KeyCode::Char('d') | KeyCode::Tab => (ui.tab, ui.selected) = ((ui.tab + 1) % tabs, 0),
        KeyCode::Char('f') => ui.flops = !ui.flops,
        // Expand everything, or collapse everything when it all is.
        KeyCode::Char('x') => {
            ui.expanded = Some(all_keys(v, ui))
                .filter(|k| !k.is_subset(&ui.expanded))
                .unwrap_or_default();
        }
        KeyCode::Up => ui.selected = ui.selected.saturating_sub(1),
        KeyCode::Down => ui.selected = (ui.selected + 1).min(rows.len().saturating_sub(1)),
        KeyCode::Right => ui.expanded.extend(selected.and_then(|r| r.key.clone())),
        KeyCode::Left => {
            if let Some(k) = selected.and_then(|r| r.key.as_ref()) {
                ui.expanded.remove(k);
            }
        }
        _ => {}
    }
    true
}

/// Run `xunds top`.
pub fn main(args: TopArgs) -> ExitCode {
    let mut monitor = match super::build("xunds top", &args.slabs, None, args.period) {
        Ok(m) => m,
        Err(code) => return code,
    };
    // A full-screen view needs a terminal to draw on and read keys from;
    // without one, say so (exit 2) instead of failing inside the terminal
    // library with a panic and escape codes on a pipe.
    if !(std::io::stdin().is_terminal() && std::io::stdout().is_terminal()) {
        let why =
            "needs a terminal on stdin and stdout (`xunds monitor` writes JSON lines to a pipe)";
        return crate::fail(2, "xunds top", why);
    }
    let mut terminal = match ratatui::try_init() {
        Ok(t) => t,
        Err(e) => return crate::fail(1, "xunds top", format_args!("the terminal: {e}")),
    };
    let result = show(&mut monitor, &mut terminal, args.period);
    ratatui::restore();
    result.map_or_else(|e| crate::fail(1, "xunds top", e), |()| ExitCode::SUCCESS)
}

/// The view until a key quits it: a document each period, drawn again after
/// each key.
fn show(monitor: &mut Monitor, terminal: &mut DefaultTerminal, period: Duration) -> Result<()> {
    let (mut ui, mut v, mut next) = (Ui::default(), View::default(), Instant::now());
    loop {
        if Instant::now() >= next {
            v = monitor.tick();
            // Exits are shown in the view, not logged over the screen.
            monitor.log.clear();
            ui.tab = ui.tab.min(v.neuron_runtime_data.len());
            next += period;
        }
        terminal.draw(|f| draw(f, &v, &ui))?;
        if event::poll(next.saturating_duration_since(Instant::now()))? {
            if let Event::Key(k) = event::read()? {
                if k.kind == KeyEventKind::Press && !key(&mut ui, &v, k.code, k.modifiers) {
                    return Ok(());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::report::{
        NeuroncoreCounters, Report, RuntimeVcpu, SystemData, UserSystem, VcpuUsage,
    };
    use super::*;
    use indexmap::IndexMap;
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;
    use xunds::wire::nds::c_string;
    use xunds::wire::nds::model::{MemLocation, MemSlot, ModelRecord};

    fn screen(v: &View, ui: &Ui, w: u16, h: u16) -> String {
        let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
        t.draw(|f| draw(f, v, ui)).unwrap();
        let buf = t.backend().buffer().clone();
        let mut s = String::new();
        for y in 0..buf.area.height {
            for x in 0..buf.area.width {
                s.push_str(buf[(x, y)].symbol());
            }
            s.push('\n');
        }
        s
    }

    fn proc(pid: u32, tag: &str, cores: &[(usize, f64, u64)]) -> RuntimeEntry {
        let mib = 1 << 20;
        let report = Report {
            neuroncore_counters: Some(Group::new(
                1.0,
                NeuroncoreCounters {
                    neuroncores_in_use: cores
                        .iter()
                        .map(|&(core, util, flops)| {
                            let u = CoreUse {
                                neuroncore_utilization: util,
                                flops,
                            };
                            (core.to_string(), u)
                        })
                        .collect(),
                },
            )),
            execution_stats: Some(Group::new(
                1.0,
                ExecutionStats {
                    execution_summary: [("completed", 12_345)].into_iter().collect(),
                    error_summary: [("hardware", 3)].into_iter().collect(),
                    ..Default::default()
                },
            )),
            memory_used: Some(Group::new(
                1.0,
                MemoryUsed {
                    host: [4096, 2048, 0, 1024],
                    cores: cores
                        .iter()
                        .map(|c| (c.0, [2 * mib, mib, 0, 512 * 1024, 3 * mib]))
                        .collect(),
                    loaded_models: cores
                        .iter()
                        .flat_map(|c| {
                            (0..2).map(move |m| {
                                let mut record = ModelRecord {
                                    name: c_string(&format!("mlp{m}")),
                                    model_id: 10 * c.0 as u32 + m,
                                    nc_index: c.0 as u8,
                                    ..ModelRecord::EMPTY
                                };
                                let (host, dev) = (MemLocation::Host, MemLocation::Device);
                                for (loc, slot, bytes) in [
                                    (host, MemSlot::Code, 1024),
                                    (dev, MemSlot::Constants, mib),
                                    (dev, MemSlot::Code, mib / 2),
                                    (dev, MemSlot::Tensors, mib),
                                ] {
                                    record.mem_usage[loc as usize][slot as usize].total_size =
                                        bytes;
                                }
                                LoadedModel {
                                    record,
                                    is_running: true,
                                }
                            })
                        })
                        .collect(),
                },
            )),
            neuron_runtime_vcpu_usage: Some(Group::new(
                1.0,
                RuntimeVcpu {
                    vcpu_usage: UserSystem {
                        user: 35.5,
                        system: 4.0,
                    },
                },
            )),
        };
        RuntimeEntry {
            pid,
            address: String::new(),
            neuron_runtime_tag: tag.into(),
            error: String::new(),
            report,
            state: "running",
            slab: String::new(),
        }
    }

    fn sample() -> View {
        let vcpu = VcpuUsage {
            average_usage: [("user", 22.0), ("system", 5.5)].into_iter().collect(),
            usage_data: [("0".into(), IndexMap::new()), ("1".into(), IndexMap::new())]
                .into_iter()
                .collect(),
            ..Default::default()
        };
        let vcpu = Group::new(1.0, vcpu);
        View {
            neuron_runtime_data: vec![
                proc(
                    4242,
                    "4242",
                    &[(0, 42.5, 1_500_000_000), (1, 7.0, 300_000_000)],
                ),
                proc(77, "trainer", &[(0, 90.0, 2_000_000_000)]),
            ],
            system_data: SystemData {
                vcpu_usage: Some(vcpu),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn a_process_tab_shows_every_section() {
        let ui = Ui {
            tab: 1,
            ..Ui::default()
        };
        let s = screen(&sample(), &ui, 100, 30);
        for want in [
            "xunds top",
            "NeuronCore Utilization",
            "NC 0",
            "42.5%",
            "average",
            "vCPU Utilization",
            "Runtime",
            "Memory Usage Summary",
            "Host Used Memory",
            "Model Scratchpad",
            "Memory Usage Details",
            ">4242 4242<",
            "1:",
        ] {
            assert!(s.contains(want), "{want:?} missing:\n{s}");
        }
        insta::assert_snapshot!("top_process_tab", s);
    }

    #[test]
    fn the_all_tab_sums_every_process() {
        let s = screen(&sample(), &Ui::default(), 100, 30);
        assert!(s.contains(">all<"), "{s}");
        assert!(s.contains("4242/NC1") && s.contains("77/NC0"), "{s}");
        insta::assert_snapshot!("top_all_tab", s);
    }

    #[test]
    fn f_shows_flops() {
        let mut ui = Ui {
            tab: 1,
            ..Ui::default()
        };
        key(&mut ui, &sample(), KeyCode::Char('f'), KeyModifiers::NONE);
        let s = screen(&sample(), &ui, 100, 30);
        assert!(
            s.contains("NeuronCore FLOPS") && s.contains("1.5GFLOPS"),
            "{s}"
        );
        insta::assert_snapshot!("top_flops", s);
    }

    #[test]
    fn x_expands_the_whole_tree_and_a_cut_list_shows_its_position() {
        let v = sample();
        let mut ui = Ui::default();
        key(&mut ui, &v, KeyCode::Char('x'), KeyModifiers::NONE);
        let rows = tree(&v, &ui);
        assert!(rows.iter().any(|r| r.label == "Tensors" && r.depth == 3));
        // Each parent is the sum of its children.
        let core0 = rows.iter().position(|r| r.label == "NC 0").unwrap();
        let kids: u64 = rows[core0 + 1..]
            .iter()
            .take_while(|r| r.depth > 1)
            .filter(|r| r.depth == 2)
            .map(|r| r.device)
            .sum();
        assert_eq!(kids, rows[core0].device);
        for _ in 0..12 {
            key(&mut ui, &v, KeyCode::Down, KeyModifiers::NONE);
        }
        let s = screen(&v, &ui, 80, 24);
        assert!(s.contains(&format!("of {}", rows.len())), "{s}");
        insta::assert_snapshot!("top_tree_80x24", s);
        // x again collapses it.
        key(&mut ui, &v, KeyCode::Char('x'), KeyModifiers::NONE);
        assert_eq!(tree(&v, &ui).len(), 2);
        let one = Ui {
            tab: 1,
            ..Ui::default()
        };
        // Two cores and the host memory on no core.
        assert_eq!(tree(&v, &one).len(), 3);
    }

    #[test]
    fn keys_select_tabs_and_nodes() {
        let v = sample();
        let mut ui = Ui::default();
        key(&mut ui, &v, KeyCode::Char('3'), KeyModifiers::NONE);
        assert_eq!(ui.tab, 2);
        key(&mut ui, &v, KeyCode::Char('9'), KeyModifiers::NONE);
        assert_eq!(ui.tab, 2, "no ninth tab");
        key(&mut ui, &v, KeyCode::Char('d'), KeyModifiers::NONE);
        assert_eq!(ui.tab, 0, "d wraps to all");
        key(&mut ui, &v, KeyCode::Char('a'), KeyModifiers::NONE);
        assert_eq!(ui.tab, 2);
        key(&mut ui, &v, KeyCode::Right, KeyModifiers::NONE);
        assert_eq!(tree(&v, &ui)[1].label, "mlp0");
        key(&mut ui, &v, KeyCode::Left, KeyModifiers::NONE);
        assert_eq!(tree(&v, &ui).len(), 2);
        assert!(!key(&mut ui, &v, KeyCode::Char('q'), KeyModifiers::NONE));
    }

    #[test]
    fn no_process_waits() {
        let s = screen(&View::default(), &Ui::default(), 80, 24);
        assert!(s.contains("no running xunds process"), "{s}");
        insta::assert_snapshot!("top_empty", s);
    }
}
