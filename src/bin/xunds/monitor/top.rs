//! `xunds top`: a live terminal view of running `xunds` processes, in the
//! manner of neuron-top: one tab per process, per-core utilisation and
//! executions per second, errors by class, memory by model.
//!
//! Keys: `←`/`→` or `Tab` switch process, `q`/`Esc`/`Ctrl-C` quit.
//!
//! The view is a pure function of a [`View`] (built from the monitor's
//! state each period), so it is tested with ratatui's `TestBackend`.

use std::collections::HashMap;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Cell, Gauge, Paragraph, Row, Table, Tabs};
use ratatui::Frame;

use xunds::wire::nds::counters::NcCounter;

use super::engine::Monitor;
use xunds::nds::Counters;

/// A live terminal view of running xunds processes, as neuron-top.
///
/// One tab per process (left/right or Tab to switch), per-core utilisation
/// and executions per second, errors by class, memory by model; q, Esc or
/// Ctrl-C quits.
#[derive(clap::Args, Debug, Clone)]
pub struct TopArgs {
    /// Slab files to watch. Default: every running `xunds run`'s slab in --dir.
    pub slabs: Vec<PathBuf>,
    /// Where to look for slabs when none are named.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Refresh period (e.g. 1s, 500ms).
    #[arg(long, default_value = "1s", allow_hyphen_values = true, value_parser = crate::parse_duration)]
    pub period: Duration,
}

/// One core's row.
#[derive(Clone, Debug, PartialEq)]
pub struct CoreRow {
    /// Core index.
    pub core: usize,
    /// Utilisation, percent.
    pub util: f64,
    /// Successful executions per second over the last period.
    pub exec_per_s: f64,
    /// Successful executions since start.
    pub completed: u64,
    /// Executions that ended in any error since start.
    pub failed: u64,
}

/// One model's row.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelRow {
    /// Name.
    pub name: String,
    /// Model id.
    pub model_id: u32,
    /// Core.
    pub core: u32,
    /// Host bytes.
    pub host: u64,
    /// Device bytes.
    pub device: u64,
}

/// One process's tab.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tab {
    /// `pid tag`.
    pub title: String,
    /// The runtime's error ("" when fine).
    pub error: String,
    /// Per core in use.
    pub cores: Vec<CoreRow>,
    /// Error classes: (name, since start, last period).
    pub errors: Vec<(&'static str, u64, u64)>,
    /// Per model record.
    pub models: Vec<ModelRow>,
    /// Host and device bytes in use.
    pub memory: (u64, u64),
}

/// Everything the screen shows.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct View {
    /// One per process.
    pub tabs: Vec<Tab>,
    /// The selected tab.
    pub selected: usize,
    /// The period, seconds.
    pub period: f64,
}

const ERROR_CLASSES: [(&str, NcCounter); 6] = [
    ("generic", NcCounter::ErrGeneric),
    ("numerical", NcCounter::ErrNumerical),
    ("transient", NcCounter::ErrTransient),
    ("model", NcCounter::ErrModel),
    ("runtime", NcCounter::ErrRt),
    ("hardware", NcCounter::ErrHw),
];

fn failed(c: &Counters, core: usize) -> u64 {
    [
        NcCounter::InferCompletedWithErr,
        NcCounter::InferCompletedWithNumErr,
        NcCounter::InferTimedOut,
        NcCounter::InferFailedToQueue,
    ]
    .iter()
    .fold(0u64, |a, k| a.wrapping_add(c.nc(core, *k)))
}

/// Build the view from the monitor after a tick; `prev` keeps each slab's
/// previous counters for the per-core rates.
pub fn view(
    monitor: &mut Monitor,
    prev: &mut HashMap<PathBuf, (Instant, Counters)>,
    selected: usize,
) -> View {
    let mut tabs = Vec::new();
    for rt in monitor.runtimes() {
        let mut tab = Tab {
            title: format!("{} {}", rt.pid(), rt.tag()),
            error: rt.error(),
            ..Tab::default()
        };
        let Some(s) = rt.latest() else {
            tabs.push(tab);
            continue;
        };
        let now = &s.counters;
        let (secs, was) = match prev.get(rt.path()) {
            Some((at, c)) => (s.at.duration_since(*at).as_secs_f64(), Some(c)),
            None => (0.0, None),
        };
        let util: HashMap<String, f64> = rt
            .report()
            .neuroncore_counters
            .as_ref()
            .map(|n| {
                n.neuroncores_in_use
                    .0
                    .iter()
                    .map(|(k, u)| (k.clone(), u.neuroncore_utilization))
                    .collect()
            })
            .unwrap_or_default();
        for core in now.cores_in_use() {
            let done = now.nc(core, NcCounter::InferCompleted);
            let rate = match was {
                Some(w) if secs > 0.0 => {
                    done.saturating_sub(w.nc(core, NcCounter::InferCompleted)) as f64 / secs
                }
                _ => 0.0,
            };
            tab.cores.push(CoreRow {
                core,
                util: util.get(&core.to_string()).copied().unwrap_or(0.0),
                exec_per_s: rate,
                completed: done,
                failed: failed(now, core),
            });
        }
        for (name, k) in ERROR_CLASSES {
            let total = now.sum(k);
            let last = was.map_or(0, |w| total.saturating_sub(w.sum(k)));
            tab.errors.push((name, total, last));
        }
        if let Some(m) = &rt.report().memory_used {
            let u = &m.neuron_runtime_used_bytes;
            tab.memory = (u.host, u.neuron_device);
            for lm in &m.loaded_models {
                for (_, sg) in &lm.subgraphs.0 {
                    tab.models.push(ModelRow {
                        name: lm.name.clone(),
                        model_id: lm.model_id,
                        core: sg.neuroncore_index,
                        host: sg.memory_used_bytes.host,
                        device: sg.memory_used_bytes.neuron_device,
                    });
                }
            }
        }
        prev.insert(rt.path().to_path_buf(), (s.at, now.clone()));
        tabs.push(tab);
    }
    let selected = selected.min(tabs.len().saturating_sub(1));
    View {
        tabs,
        selected,
        period: 0.0,
    }
}

fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// Draw `v` on `f`.
pub fn draw(f: &mut Frame, v: &View) {
    let area = f.area();
    let rows = Layout::default()
        .direction(Direction::Vertical)
        .constraints([
            Constraint::Length(3),
            Constraint::Min(6),
            Constraint::Length(9),
            Constraint::Length(2),
        ])
        .split(area);
    let titles: Vec<Line> = v.tabs.iter().map(|t| Line::from(t.title.clone())).collect();
    let tabs = Tabs::new(titles)
        .block(Block::default().borders(Borders::ALL).title(" xunds top "))
        .select(v.selected)
        .highlight_style(
            Style::default()
                .add_modifier(Modifier::BOLD)
                .fg(Color::Yellow),
        );
    f.render_widget(tabs, rows[0]);
    let Some(tab) = v.tabs.get(v.selected) else {
        let p = Paragraph::new("no running xunds process (no slab found); waiting...")
            .block(Block::default().borders(Borders::ALL));
        f.render_widget(p, rows[1]);
        return;
    };
    draw_cores(f, rows[1], tab);
    let bottom = Layout::default()
        .direction(Direction::Horizontal)
        .constraints([Constraint::Length(34), Constraint::Min(20)])
        .split(rows[2]);
    let err_rows: Vec<Row> = tab
        .errors
        .iter()
        .map(|(n, total, last)| Row::new(vec![n.to_string(), total.to_string(), last.to_string()]))
        .collect();
    let errs = Table::new(
        err_rows,
        [
            Constraint::Length(10),
            Constraint::Length(10),
            Constraint::Length(8),
        ],
    )
    .header(
        Row::new(vec!["class", "total", "period"])
            .style(Style::default().add_modifier(Modifier::BOLD)),
    )
    .block(
        Block::default()
            .borders(Borders::ALL)
            .title(" errors by class "),
    );
    f.render_widget(errs, bottom[0]);
    let model_rows: Vec<Row> = tab
        .models
        .iter()
        .map(|m| {
            Row::new(vec![
                Cell::from(m.name.clone()),
                Cell::from(m.model_id.to_string()),
                Cell::from(m.core.to_string()),
                Cell::from(bytes(m.host)),
                Cell::from(bytes(m.device)),
            ])
        })
        .collect();
    let models = Table::new(
        model_rows,
        [
            Constraint::Min(12),
            Constraint::Length(8),
            Constraint::Length(5),
            Constraint::Length(10),
            Constraint::Length(10),
        ],
    )
    .header(
        Row::new(vec!["model", "id", "core", "host", "device"])
            .style(Style::default().add_modifier(Modifier::BOLD)),
    )
    .block(Block::default().borders(Borders::ALL).title(format!(
        " memory by model (host {}, device {}) ",
        bytes(tab.memory.0),
        bytes(tab.memory.1)
    )));
    f.render_widget(models, bottom[1]);
    let status = if tab.error.is_empty() {
        "←/→ tab: switch process   q: quit".to_string()
    } else {
        format!("error: {}", tab.error)
    };
    f.render_widget(Paragraph::new(status), rows[3]);
}

fn draw_cores(f: &mut Frame, area: Rect, tab: &Tab) {
    let block = Block::default()
        .borders(Borders::ALL)
        .title(" neuroncores ");
    let inner = block.inner(area);
    f.render_widget(block, area);
    if inner.height == 0 {
        return;
    }
    let header = Rect { height: 1, ..inner };
    f.render_widget(
        Paragraph::new(format!(
            "{:<6}{:<30}{:>12}{:>14}{:>10}",
            "core", "utilization", "exec/s", "completed", "failed"
        ))
        .style(Style::default().add_modifier(Modifier::BOLD)),
        header,
    );
    for (i, c) in tab.cores.iter().enumerate() {
        let y = inner.y + 1 + i as u16;
        if y >= inner.y + inner.height {
            break;
        }
        let line = Rect {
            y,
            height: 1,
            ..inner
        };
        let cols = Layout::default()
            .direction(Direction::Horizontal)
            .constraints([
                Constraint::Length(6),
                Constraint::Length(30),
                Constraint::Min(10),
            ])
            .split(line);
        f.render_widget(Paragraph::new(format!("nc{}", c.core)), cols[0]);
        let g = Gauge::default()
            .gauge_style(Style::default().fg(Color::Green))
            .ratio((c.util / 100.0).clamp(0.0, 1.0))
            .label(format!("{:5.1}%", c.util));
        f.render_widget(
            g,
            Rect {
                width: cols[1].width.saturating_sub(2),
                ..cols[1]
            },
        );
        f.render_widget(
            Paragraph::new(format!(
                "{:>12.0}{:>14}{:>10}",
                c.exec_per_s, c.completed, c.failed
            )),
            cols[2],
        );
    }
}

/// Run `xunds top`.
pub fn main(args: TopArgs) -> ExitCode {
    let mut monitor = match super::build(
        "xunds top",
        &args.slabs,
        args.dir.as_ref(),
        None,
        args.period,
    ) {
        Ok(m) => m,
        Err(code) => return code,
    };
    // A full-screen view needs a terminal to draw on and read keys from;
    // without one, say so (exit 2) instead of failing inside the terminal
    // library with a panic and escape codes on a pipe.
    if !(std::io::stdin().is_terminal() && std::io::stdout().is_terminal()) {
        return crate::usage_error(
            "xunds top",
            "needs a terminal on stdin and stdout (`xunds monitor` writes JSON lines to a pipe)",
        );
    }
    let mut terminal = match ratatui::try_init() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("xunds top: the terminal: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut prev = HashMap::new();
    let mut selected = 0usize;
    let mut next = Instant::now();
    let mut v = View::default();
    let result = loop {
        if Instant::now() >= next {
            let _ = monitor.tick();
            v = view(&mut monitor, &mut prev, selected);
            v.period = args.period.as_secs_f64();
            next += args.period;
        }
        v.selected = selected.min(v.tabs.len().saturating_sub(1));
        if let Err(e) = terminal.draw(|f| draw(f, &v)) {
            break Err(e.to_string());
        }
        let wait = next.saturating_duration_since(Instant::now());
        match event::poll(wait) {
            Ok(true) => match event::read() {
                Ok(Event::Key(k)) if k.kind == KeyEventKind::Press => match k.code {
                    KeyCode::Char('q') | KeyCode::Esc => break Ok(()),
                    KeyCode::Char('c') if k.modifiers.contains(KeyModifiers::CONTROL) => {
                        break Ok(())
                    }
                    KeyCode::Right | KeyCode::Tab => {
                        selected = (selected + 1) % v.tabs.len().max(1);
                    }
                    KeyCode::Left | KeyCode::BackTab => {
                        let n = v.tabs.len().max(1);
                        selected = (selected + n - 1) % n;
                    }
                    _ => {}
                },
                Ok(_) => {}
                Err(e) => break Err(e.to_string()),
            },
            Ok(false) => {}
            Err(e) => break Err(e.to_string()),
        }
    };
    ratatui::restore();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xunds top: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    fn screen(v: &View) -> String {
        let mut t = Terminal::new(TestBackend::new(100, 24)).unwrap();
        t.draw(|f| draw(f, v)).unwrap();
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

    fn sample_view() -> View {
        View {
            tabs: vec![
                Tab {
                    title: "4242 xunds".into(),
                    error: String::new(),
                    cores: vec![
                        CoreRow {
                            core: 0,
                            util: 42.5,
                            exec_per_s: 12345.0,
                            completed: 99_000,
                            failed: 3,
                        },
                        CoreRow {
                            core: 1,
                            util: 7.0,
                            exec_per_s: 2000.0,
                            completed: 5_000,
                            failed: 0,
                        },
                    ],
                    errors: vec![("generic", 0, 0), ("hardware", 3, 1)],
                    models: vec![ModelRow {
                        name: "mlp-a".into(),
                        model_id: 7,
                        core: 1,
                        host: 2048,
                        device: 3 << 20,
                    }],
                    memory: (4096, 6 << 20),
                },
                Tab {
                    title: "77 other".into(),
                    error: "process 77 has exited; these are its final counters".into(),
                    ..Tab::default()
                },
            ],
            selected: 0,
            period: 1.0,
        }
    }

    #[test]
    fn shows_tabs_cores_errors_and_models() {
        let s = screen(&sample_view());
        assert!(s.contains("4242 xunds"), "{s}");
        assert!(s.contains("77 other"), "{s}");
        assert!(s.contains("nc0"), "{s}");
        assert!(s.contains("nc1"), "{s}");
        assert!(s.contains("42.5%"), "{s}");
        assert!(s.contains("12345"), "{s}");
        assert!(s.contains("hardware"), "{s}");
        assert!(s.contains("mlp-a"), "{s}");
        assert!(s.contains("3.0 MiB"), "{s}");
        insta::assert_snapshot!("top_screen", s);
    }

    #[test]
    fn second_tab_shows_its_error_and_empty_view_waits() {
        let mut v = sample_view();
        v.selected = 1;
        let s = screen(&v);
        assert!(s.contains("error: process 77 has exited"), "{s}");
        assert!(!s.contains("nc0"), "{s}");
        let s = screen(&View::default());
        assert!(s.contains("no running xunds process"), "{s}");
    }
}
