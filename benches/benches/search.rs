//! Query graph build + contrast search, and counterfactual realization, against tree depth.
//!
//! Per depth 4..=12: one random tree over a 12-feature schema (each node off the deepest path
//! splits with probability 0.9, so depth 7 has about 175 nodes and every depth from 8 on hits the
//! 255-node cap and grows sparser), and 16 random query points cycled through. `search` times
//! `Graph::build` plus popping up to 50 contrast leaves (the default `max_search`); `realize`
//! times one `counterfactual::realize` over the first 5 contrast leaves of every point.

use cent_benches::synthetic::{random_point, random_schema, random_tree, tree_depth};
use cent_nostd::capacity::NODES;
use cent_nostd::counterfactual;
use cent_nostd::graph::Graph;
use cent_nostd::schema::{Query, Schema};
use cent_nostd::search::{Search, Target};
use cent_nostd::tree::{Node, NodeIdx, Tree};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro128PlusPlus;
use std::hint::black_box;

const POINTS: usize = 16;
const MAX_SEARCH: usize = 50;
const REALIZED: usize = 5;

/// One query point and the class its leaf predicts.
struct Point {
    x: Vec<f32>,
    fact: u8,
}

fn fact_of(tree: &Tree<'_>, x: &[f32]) -> u8 {
    match tree.route(x).ok().and_then(|leaf| tree.node(leaf)) {
        Some(Node::Leaf { class, .. }) => class,
        _ => 0,
    }
}

/// Builds the graph and pops up to `MAX_SEARCH` contrast leaves, calling `hit` on each.
fn contrast_search(
    tree: &Tree<'_>,
    schema: &Schema,
    query: &Query,
    point: &Point,
    graph: &mut Graph<NODES>,
    search: &mut Search<NODES>,
    mut hit: impl FnMut(NodeIdx),
) -> usize {
    graph.build(tree, schema, query, &point.x).expect("synthetic point matches its schema");
    search.start(graph).expect("tree fits the search");
    let mut popped = 0;
    while popped < MAX_SEARCH {
        match search.next_contrast(graph, Target::Not(point.fact)).expect("heap holds every node") {
            Some(h) => hit(h.leaf),
            None => break,
        }
        popped += 1;
    }
    popped
}

fn bench_depths(c: &mut Criterion) {
    let rng = &mut Xoshiro128PlusPlus::seed_from_u64(2024);
    let schema = random_schema(rng, 12, 2).expect("12 features fit");
    let query = schema.default_query();
    let mut graph: Box<Graph<NODES>> = Box::default();
    let mut search: Box<Search<NODES>> = Box::default();
    let mut search_group = c.benchmark_group("search");
    let mut cases = Vec::new();
    for depth in 4..=12 {
        let bytes = random_tree(rng, &schema, depth, NODES).expect("depth fits 255 nodes");
        let points: Vec<Point> =
            (0..POINTS).map(|_| random_point(rng, &schema)).map(|x| Point { fact: 0, x }).collect();
        cases.push((depth, bytes, points));
    }
    for (depth, bytes, points) in &mut cases {
        let tree = Tree::new(bytes, schema.columns(), schema.classes()).expect("synthetic tree is valid");
        for p in points.iter_mut() {
            p.fact = fact_of(&tree, &p.x);
        }
        let hits: usize =
            points.iter().map(|p| contrast_search(&tree, &schema, &query, p, &mut graph, &mut search, |_| ())).sum();
        eprintln!(
            "depth {depth}: {} nodes, measured depth {}, {:.1} contrast leaves per query",
            tree.len(),
            tree_depth(&tree),
            hits as f64 / POINTS as f64
        );
        search_group.bench_with_input(BenchmarkId::from_parameter(*depth), &tree, |b, tree| {
            let mut k = 0;
            b.iter(|| {
                k = (k + 1) % POINTS;
                black_box(contrast_search(tree, &schema, &query, &points[k], &mut graph, &mut search, |_| ()))
            });
        });
    }
    search_group.finish();
    let mut realize_group = c.benchmark_group("realize");
    for (depth, bytes, points) in &cases {
        let tree = Tree::new(bytes, schema.columns(), schema.classes()).expect("synthetic tree is valid");
        let mut jobs: Vec<(usize, NodeIdx)> = Vec::new();
        for (k, p) in points.iter().enumerate() {
            let mut leaves = Vec::new();
            contrast_search(&tree, &schema, &query, p, &mut graph, &mut search, |leaf| leaves.push(leaf));
            jobs.extend(leaves.into_iter().take(REALIZED).map(|leaf| (k, leaf)));
        }
        realize_group.bench_with_input(BenchmarkId::from_parameter(*depth), &tree, |b, tree| {
            let mut out = vec![0.0f32; schema.columns()];
            let mut j = 0;
            b.iter(|| {
                j = (j + 1) % jobs.len();
                let (k, leaf) = jobs[j];
                let r = counterfactual::realize(&schema, &query, tree, leaf, &points[k].x, rng, &mut out);
                black_box(r.is_ok())
            });
        });
    }
    realize_group.finish();
}

criterion_group!(benches, bench_depths);
criterion_main!(benches);
