//! `interband replay --plot`: an SVG only, and its labels read in a real
//! renderer (resvg): the autocompact label's box is light and, where this
//! machine has a font to draw it with, holds dark text. Without system fonts,
//! the text's test reports itself ignored, with the reason.

mod common;

use common::*;
use serde_json::json;

/// A replayed session's plot: calls at these percentages of a 200k window.
fn plot(w: &World, pcts: &[u64]) -> String {
    let t = w.dir.path().join("p.jsonl");
    let cwd = w.dir.path().join("project");
    std::fs::create_dir_all(&cwd).unwrap();
    let mut writer = interpulse::synthetic::Writer::new(&t, "plot-session", &cwd);
    writer.prompt("Plot this").unwrap();
    for (i, p) in pcts.iter().enumerate() {
        let input = json!({"command": format!("step {i}")});
        writer
            .tool("Bash", input, "ok", false, p * 2000, false)
            .unwrap();
    }
    let svg_path = w.dir.path().join("out.svg");
    let o = w.run(&[
        "replay",
        t.to_str().unwrap(),
        "--plot",
        svg_path.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    std::fs::read_to_string(&svg_path).unwrap()
}

/// The label's box in the rendered plot: its light and dark pixels.
fn label_pixels(svg: &str, opt: &resvg::usvg::Options) -> (u32, u32) {
    let tree = resvg::usvg::Tree::from_str(svg, opt).unwrap();
    let size = tree.size().to_int_size();
    let mut pixmap = resvg::tiny_skia::Pixmap::new(size.width(), size.height()).unwrap();
    resvg::render(
        &tree,
        resvg::tiny_skia::Transform::default(),
        &mut pixmap.as_mut(),
    );
    let _ = pixmap.save_png(repo().join("target/replay-plot.png"));
    let label = svg
        .split("<rect class=\"label-box\" ")
        .nth(1)
        .unwrap()
        .split("/>")
        .next()
        .unwrap();
    let attr = |name: &str| -> f32 {
        label
            .split(&format!("{name}=\""))
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    let (x, y, wd, ht) = (attr("x"), attr("y"), attr("width"), attr("height"));
    let (mut dark, mut light) = (0, 0);
    for py in y as u32 + 1..(y + ht) as u32 - 1 {
        for px in x as u32 + 1..(x + wd) as u32 - 1 {
            let c = pixmap.pixel(px, py).unwrap();
            let lum = (c.red() as u32 + c.green() as u32 + c.blue() as u32) / 3;
            if lum < 110 {
                dark += 1;
            } else if lum > 230 {
                light += 1;
            }
        }
    }
    (light, dark)
}

/// resvg's options with this machine's fonts, the SVG's generic sans family
/// mapped as a browser would (a sans face it has: DejaVu Sans on Debian).
fn with_fonts() -> resvg::usvg::Options<'static> {
    let mut opt = resvg::usvg::Options::default();
    opt.fontdb_mut().load_system_fonts();
    let sans = opt
        .fontdb
        .faces()
        .flat_map(|f| f.families.iter().map(|(name, _)| name.clone()))
        .find(|n| n.contains("Sans") && !n.contains("Mono"))
        .or_else(|| opt.fontdb.faces().next().map(|f| f.families[0].0.clone()));
    if let Some(family) = sans {
        opt.fontdb_mut().set_sans_serif_family(family);
    }
    opt
}

const PCTS: [u64; 7] = [20, 40, 60, 70, 85, 85, 85];

fn the_plot_is_svg_only_and_its_label_box_is_light() {
    let w = World::new();
    let bad = w.dir.path().join("out.png");
    let fixture =
        repo().join("tests/fixtures/claude-code-2.1.332/transcript.compacted_session.jsonl");
    let o = w.run(&[
        "replay",
        fixture.to_str().unwrap(),
        "--plot",
        bad.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains(".svg"), "{}", stderr(&o));
    assert!(!bad.exists());
    // A compaction's marker carries interband's record of it.
    let good = w.dir.path().join("out.svg");
    let o = w.run(&[
        "replay",
        fixture.to_str().unwrap(),
        "--plot",
        good.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let svg = std::fs::read_to_string(&good).unwrap();
    assert!(
        svg.contains("compaction at call 1: compacted at 32k: the summary kept 2 of 2 facts"),
        "{svg}"
    );
    let svg = plot(&w, &PCTS);
    assert!(
        !svg.contains("paint-order"),
        "no label relies on paint-order"
    );
    let (light, dark) = label_pixels(&svg, &resvg::usvg::Options::default());
    assert!(
        light > dark,
        "the label's box is light: {light} light, {dark} dark"
    );
}

fn the_plot_labels_text_is_dark_on_its_box_in_a_real_renderer() {
    let w = World::new();
    let svg = plot(&w, &PCTS);
    let (light, dark) = label_pixels(&svg, &with_fonts());
    assert!(
        light > dark,
        "the label's box is light: {light} light, {dark} dark"
    );
    assert!(
        dark > 20,
        "the label's text is dark on it: {dark} dark pixels (target/replay-plot.png)"
    );
}

fn main() -> std::process::ExitCode {
    let fonts = (!with_fonts().fontdb.is_empty())
        .then_some(the_plot_labels_text_is_dark_on_its_box_in_a_real_renderer as fn())
        .ok_or_else(|| {
            "no system fonts to draw the label's text with (apt install fonts-dejavu-core)"
                .to_owned()
        });
    trials::run(vec![
        (
            "the_plot_is_svg_only_and_its_label_box_is_light",
            Ok(the_plot_is_svg_only_and_its_label_box_is_light),
        ),
        (
            "the_plot_labels_text_is_dark_on_its_box_in_a_real_renderer",
            fonts,
        ),
    ])
}
