//! A graph that is one `TreeEnsembleClassifier` (`ai.onnx.ml`), read into a flat forest and
//! evaluated by cent: what LightGBM, XGBoost (onnxmltools) and scikit-learn's random forests
//! and gradient boosting (skl2onnx) export.
//!
//! The scores follow onnxruntime's reading of the operator: per class the sum of the leaf
//! weights of every tree plus `base_values`, then `post_transform` (`NONE`, `LOGISTIC`,
//! `SOFTMAX`). With two class labels and leaf weights for class 0 only (the binary layout of
//! every exporter above), the one score `s` is the positive class's: `LOGISTIC` gives
//! `[σ(−s), σ(s)]`, `NONE` `[1 − s, s]`; a single `base_values` entry is added to `s`.
//!
//! Trees are walked for [`LANES`] rows at once, without branches: a leaf points to itself, so
//! every row takes the tree's depth in steps.

use super::graph::{self, Graph};
use tract_onnx::pb::NodeProto;

/// Rows walked down a tree together.
const LANES: usize = 8;

/// How a branch compares a feature with its threshold (`BRANCH_*`); one per forest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rule {
    Leq,
    Lt,
    Gte,
    Gt,
}

impl Rule {
    fn parse(mode: &str) -> Option<Self> {
        match mode {
            "BRANCH_LEQ" => Some(Rule::Leq),
            "BRANCH_LT" => Some(Rule::Lt),
            "BRANCH_GTE" => Some(Rule::Gte),
            "BRANCH_GT" => Some(Rule::Gt),
            _ => None,
        }
    }
}

/// What turns the summed scores into probabilities.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Transform {
    None,
    Logistic,
    Softmax,
}

/// One node: a branch tests `feature` against `threshold`; a leaf is its own child both ways.
#[derive(Debug, Clone, Copy)]
struct Node {
    feature: u32,
    threshold: f32,
    /// The child when the comparison holds, and when it does not.
    child: [u32; 2],
}

/// A tree ensemble in flat arrays; nodes of all trees in one list, addressed by index.
#[derive(Debug, Clone)]
pub(super) struct Forest {
    rule: Rule,
    nodes: Vec<Node>,
    /// Per node: whether a missing (NaN) value goes to the `true` child.
    nan_true: Vec<bool>,
    /// Per node: its range in `votes` (empty for a branch).
    votes_of: Vec<(u32, u32)>,
    /// (class, weight) of every leaf, leaf by leaf.
    votes: Vec<(u32, f32)>,
    /// Per node: the sum of its votes (the one score of the binary layout; 0 for a branch).
    leaf_value: Vec<f32>,
    /// Per tree: the root node and the depth (steps from the root to the deepest leaf).
    trees: Vec<(u32, u32)>,
    n_features: usize,
    /// Score columns summed (the class labels, or 1 in the binary layout).
    scores: usize,
    classes: usize,
    base: Vec<f32>,
    transform: Transform,
}

/// Attributes of one tree node as the operator lists them.
struct RawNode {
    tree: i64,
    id: i64,
    feature: i64,
    value: f32,
    leaf: bool,
    yes: i64,
    no: i64,
    nan_true: bool,
}

impl Forest {
    /// The forest of the graph when its probability output `output` comes straight from one
    /// `TreeEnsembleClassifier` reading the input, for `n_cols` columns and `classes` classes.
    pub(super) fn from_graph(graph: &Graph<'_>, output: &str, n_cols: usize, classes: usize) -> Option<Forest> {
        let output = graph::unwrap_passthrough(graph, output);
        let (node, 1) = graph.producer(output)? else { return None };
        let reads_input = node.input.first().map(|v| graph::unwrap_passthrough(graph, v)) == graph.input();
        if node.op_type != "TreeEnsembleClassifier" || node.domain != "ai.onnx.ml" || !reads_input {
            return None;
        }
        let forest = Forest::from_node(node, classes)?;
        (forest.n_features <= n_cols).then_some(forest)
    }

    fn from_node(node: &NodeProto, classes: usize) -> Option<Forest> {
        let labels =
            graph::ints(node, "classlabels_int64s").len().max(graph::strings(node, "classlabels_strings").len());
        let raw = raw_nodes(node)?;
        let rule = single_rule(node)?;
        let transform = match graph::string(node, "post_transform").unwrap_or("NONE") {
            "NONE" => Transform::None,
            "LOGISTIC" => Transform::Logistic,
            "SOFTMAX" => Transform::Softmax,
            _ => return None,
        };
        let class_ids = graph::ints(node, "class_ids");
        let binary = labels == 2 && class_ids.iter().all(|&c| c == 0);
        let scores = if binary { 1 } else { labels };
        let base = graph::floats_attr(node, "base_values").to_vec();
        let base_ok = base.is_empty() || base.len() == scores;
        if labels != classes || !base_ok || (binary && transform == Transform::Softmax) {
            return None;
        }
        let mut forest = Forest {
            rule,
            nodes: Vec::new(),
            nan_true: Vec::new(),
            votes_of: Vec::new(),
            votes: Vec::new(),
            leaf_value: Vec::new(),
            trees: Vec::new(),
            n_features: 0,
            scores,
            classes,
            base,
            transform,
        };
        let keys = forest.lay_out(&raw)?;
        forest.add_votes(node, scores, &keys)?;
        forest.depths()?;
        forest.leaf_value = forest
            .votes_of
            .iter()
            .map(|&(a, b)| forest.votes[a as usize..b as usize].iter().map(|v| v.1).sum())
            .collect();
        Some(forest)
    }

    /// Nodes sorted by (tree, id), children as indices into that order; returns the sorted
    /// (tree, id) keys.
    fn lay_out(&mut self, raw: &[RawNode]) -> Option<Vec<(i64, i64)>> {
        let mut order: Vec<usize> = (0..raw.len()).collect();
        order.sort_by_key(|&i| (raw[i].tree, raw[i].id));
        let keys: Vec<(i64, i64)> = order.iter().map(|&i| (raw[i].tree, raw[i].id)).collect();
        if keys.windows(2).any(|w| w[0] == w[1]) {
            return None;
        }
        let index = |tree: i64, id: i64| keys.binary_search(&(tree, id)).ok().and_then(|at| u32::try_from(at).ok());
        for (at, &i) in order.iter().enumerate() {
            let n = &raw[i];
            let me = u32::try_from(at).ok()?;
            if at == 0 || keys[at - 1].0 != n.tree {
                self.trees.push((me, 0));
            }
            let node = if n.leaf {
                Node { feature: 0, threshold: f32::NAN, child: [me, me] }
            } else {
                let feature = u32::try_from(n.feature).ok()?;
                self.n_features = self.n_features.max(feature as usize + 1);
                Node { feature, threshold: n.value, child: [index(n.tree, n.yes)?, index(n.tree, n.no)?] }
            };
            self.nodes.push(node);
            self.nan_true.push(n.nan_true);
            self.votes_of.push((0, 0));
        }
        Some(keys)
    }

    fn is_leaf(&self, n: usize) -> bool {
        self.nodes[n].child == [n as u32; 2]
    }

    /// The leaves' (class, weight) entries, grouped leaf by leaf.
    fn add_votes(&mut self, node: &NodeProto, scores: usize, keys: &[(i64, i64)]) -> Option<()> {
        let (trees, ids) = (graph::ints(node, "class_treeids"), graph::ints(node, "class_nodeids"));
        let (classes, weights) = (graph::ints(node, "class_ids"), graph::floats_attr(node, "class_weights"));
        let n = trees.len();
        if ids.len() != n || classes.len() != n || weights.len() != n {
            return None;
        }
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by_key(|&i| (trees[i], ids[i]));
        for i in order {
            let class = u32::try_from(classes[i]).ok().filter(|&c| (c as usize) < scores)?;
            let at = keys.binary_search(&(trees[i], ids[i])).ok()?;
            let leaf = self.is_leaf(at);
            let slot = self.votes_of.get_mut(at)?;
            let next = u32::try_from(self.votes.len()).ok()?;
            if slot.1 == 0 {
                *slot = (next, next);
            }
            if slot.1 != next || !leaf {
                return None;
            }
            slot.1 = next + 1;
            self.votes.push((class, weights[i]));
        }
        Some(())
    }

    /// Each tree's depth; refuses a tree whose walk does not end in leaves (a cycle).
    fn depths(&mut self) -> Option<()> {
        let ends: Vec<u32> = self.trees.iter().skip(1).map(|&(r, _)| r).chain([self.nodes.len() as u32]).collect();
        for (t, end) in ends.into_iter().enumerate() {
            let root = self.trees[t].0;
            let size = end - root;
            let mut depth = 0;
            let mut level = vec![root];
            while level.iter().any(|&n| !self.is_leaf(n as usize)) {
                depth += 1;
                if depth > size {
                    return None;
                }
                level = level
                    .iter()
                    .flat_map(|&n| self.nodes[n as usize].child)
                    .filter(|&c| (root..end).contains(&c))
                    .collect::<Vec<_>>();
                level.sort_unstable();
                level.dedup();
            }
            self.trees[t].1 = depth;
        }
        Some(())
    }

    /// Number of trees.
    pub(super) fn trees(&self) -> usize {
        self.trees.len()
    }

    /// Branch tests a row takes through all trees: the sum of their depths.
    pub(super) fn steps(&self) -> usize {
        self.trees.iter().map(|&(_, depth)| depth as usize).sum()
    }

    /// Class probabilities of each row of `rows` (`width` columns each), row-major.
    pub(super) fn probabilities(&self, rows: &[f32], width: usize) -> Vec<f32> {
        let n = rows.len() / width.max(1);
        let mut sums = vec![0.0f32; n * self.scores];
        let blocks = rows[..n * width].chunks(LANES * width).zip(sums.chunks_mut(LANES * self.scores));
        for (block, out) in blocks {
            if block.iter().any(|x| x.is_nan()) {
                self.walk(block, width, out, |node, n, x| self.goes_true(node, n, x));
                continue;
            }
            match self.rule {
                Rule::Leq => self.walk(block, width, out, |node, _, x| x <= node.threshold),
                Rule::Lt => self.walk(block, width, out, |node, _, x| x < node.threshold),
                Rule::Gte => self.walk(block, width, out, |node, _, x| x >= node.threshold),
                Rule::Gt => self.walk(block, width, out, |node, _, x| x > node.threshold),
            }
        }
        sums.chunks_exact(self.scores).flat_map(|s| self.finish(s)).collect()
    }

    /// Adds every tree's leaf weights for the (at most [`LANES`]) rows of `block` into `out`;
    /// `goes_true(node, index, x)` is the branch test.
    #[inline(always)]
    fn walk(&self, block: &[f32], width: usize, out: &mut [f32], goes_true: impl Fn(&Node, usize, f32) -> bool) {
        let lanes = block.len() / width;
        // Lanes past the block's rows walk its last row again; their leaves are not added.
        let base: [usize; LANES] = std::array::from_fn(|l| l.min(lanes - 1) * width);
        for &(root, depth) in &self.trees {
            let mut at = [root as usize; LANES];
            for _ in 0..depth {
                for (a, b) in at.iter_mut().zip(&base) {
                    let node = &self.nodes[*a];
                    let x = block[b + node.feature as usize];
                    *a = node.child[usize::from(!goes_true(node, *a, x))] as usize;
                }
            }
            if self.scores == 1 {
                for (o, &a) in out.iter_mut().zip(&at) {
                    *o += self.leaf_value[a];
                }
                continue;
            }
            for (l, &a) in at.iter().enumerate().take(lanes) {
                let (from, to) = self.votes_of[a];
                for &(class, weight) in &self.votes[from as usize..to as usize] {
                    out[l * self.scores + class as usize] += weight;
                }
            }
        }
    }

    /// Whether `x` takes `node`'s (number `n`) `true` branch, missing values included.
    fn goes_true(&self, node: &Node, n: usize, x: f32) -> bool {
        let t = node.threshold;
        if x.is_nan() {
            return self.nan_true[n];
        }
        match self.rule {
            Rule::Leq => x <= t,
            Rule::Lt => x < t,
            Rule::Gte => x >= t,
            Rule::Gt => x > t,
        }
    }

    /// One row's summed scores as probabilities.
    fn finish(&self, sums: &[f32]) -> Vec<f32> {
        if self.scores == 1 {
            let s = sums[0] + self.base.first().copied().unwrap_or(0.0);
            return match self.transform {
                Transform::Logistic => vec![sigmoid(-s), sigmoid(s)],
                _ => vec![1.0 - s, s],
            };
        }
        let mut p: Vec<f32> =
            sums.iter().enumerate().map(|(c, s)| s + self.base.get(c).copied().unwrap_or(0.0)).collect();
        match self.transform {
            Transform::None => {}
            Transform::Logistic => p.iter_mut().for_each(|v| *v = sigmoid(*v)),
            Transform::Softmax => {
                let max = p.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                p.iter_mut().for_each(|v| *v = (*v - max).exp());
                let total: f32 = p.iter().sum();
                p.iter_mut().for_each(|v| *v /= total);
            }
        }
        debug_assert_eq!(p.len(), self.classes);
        p
    }
}

fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

/// The node attributes, checked for equal lengths.
fn raw_nodes(node: &NodeProto) -> Option<Vec<RawNode>> {
    let trees = graph::ints(node, "nodes_treeids");
    let ids = graph::ints(node, "nodes_nodeids");
    let features = graph::ints(node, "nodes_featureids");
    let values = graph::floats_attr(node, "nodes_values");
    let yes = graph::ints(node, "nodes_truenodeids");
    let no = graph::ints(node, "nodes_falsenodeids");
    let modes = graph::strings(node, "nodes_modes");
    let nan_true = graph::ints(node, "nodes_missing_value_tracks_true");
    let n = trees.len();
    let same = [ids.len(), features.len(), values.len(), yes.len(), no.len(), modes.len()].iter().all(|&l| l == n);
    if n == 0 || !same || !(nan_true.is_empty() || nan_true.len() == n) {
        return None;
    }
    Some(
        (0..n)
            .map(|i| RawNode {
                tree: trees[i],
                id: ids[i],
                feature: features[i],
                value: values[i],
                leaf: modes[i] == "LEAF",
                yes: yes[i],
                no: no[i],
                nan_true: nan_true.get(i).is_some_and(|&v| v != 0),
            })
            .collect(),
    )
}

/// The one comparison every branch uses (a forest mixing them is left to tract).
fn single_rule(node: &NodeProto) -> Option<Rule> {
    let mut rules = graph::strings(node, "nodes_modes").into_iter().filter(|m| *m != "LEAF").map(Rule::parse);
    let first = rules.next().flatten()?;
    rules.all(|r| r == Some(first)).then_some(first)
}
