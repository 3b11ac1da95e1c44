// PipelineSpec <-> JSON text: save a pipeline description to a file and load it back, with no
// code execution (unlike pickle) and in a form people can read and diff.
//
//   std::string text = hdl::to_json(spec);
//   hdl::PipelineSpec again = hdl::spec_from_json(text);   // equal to spec
//
// The document:
//   {"format": "hdl-pipeline-spec", "version": 1,
//    "nodes": [{"name": "reader", "op": "file_reader", "stage": "cpu",
//               "inputs": [], "args": {"file_root": "data/train", "shuffle": true},
//               "arg_inputs": {}}, ...],
//    "outputs": [{"node": "decode", "output": 0}, {"node": "reader", "output": 1}]}
// Edges name nodes by their unique name, not by index. Argument values keep their type: JSON
// integers are ints, JSON numbers with a fraction or exponent are floats (1.0 stays a float),
// a list of numbers with any float in it is list[float], an empty list is list[int] (which
// validation accepts as an empty list of any type). Nothing is validated against the operator
// schemas here; that happens when a Pipeline is built from the spec.
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "media/api.h"
#include "pipeline/spec.h"

HDL_API_BEGIN
namespace hdl {

/// Limits on a spec document, checked before it is parsed: its size (a real spec is a few KB;
/// lists of thousands of numbers still fit) and how deeply arrays and objects nest (a spec is
/// 5 levels deep; deep nesting would make nlohmann-json's recursive dump/copy overflow the stack).
inline constexpr size_t kSpecMaxBytes = size_t(16) << 20;  // 16 MiB
inline constexpr int kSpecMaxDepth = 64;

/// The stage a node's "stage" names: "cpu", "mixed", "gpu" (or "device", the enum's word);
/// nullopt for anything else. The one parser of stage names, for JSON specs and the Python
/// bindings' spec dicts alike (stage_name in pipeline/schema.h writes them).
std::optional<Stage> stage_from_name(const std::string& name);

/// The spec as a JSON document (pretty-printed with `indent` spaces; -1: one line).
/// Node names must be unique and non-empty (PipelineSpec::add guarantees it). Throws
/// ConfigError for a value JSON cannot hold (a non-finite float), a dangling edge, or a
/// reader whose samples were given in memory (NodeSpec::samples).
std::string to_json(const PipelineSpec& spec, int indent = 2);

/// Parses a document made by to_json (or written by hand). Throws ConfigError naming the JSON
/// path of the first problem, e.g. `$.nodes[2].args.size[1]: expected a number, got "a"`.
/// Hostile text fails the same way, never with a crash: over kSpecMaxBytes or nested deeper
/// than kSpecMaxDepth (`$: nested deeper than 64 levels (byte 64, line 1)`), integers outside
/// int64 (`$.nodes[0].args.seed: integer 18446744073709551615 is out of range ...`), numbers
/// that overflow a double (`$: not valid JSON: ... number overflow parsing '1e400'`: the parser
/// cannot say where, the literal is quoted), output indexes outside int. Quoted names and
/// strings are cut to 80 bytes.
PipelineSpec spec_from_json(const std::string& text);

}  // namespace hdl
HDL_API_END
