#include "kiln/compiler/codegen/c_source.h"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <vector>

#include "kiln/compiler/codegen/c_expressions.h"
#include "kiln/compiler/codegen/c_node_expressions.h"
#include "kiln/compiler/codegen/prelude.h"
#include "kiln/ir/printer.h"
#include "kiln/ir/verifier.h"

namespace kiln::codegen {
namespace {

using ir::DType;
using ir::Kernel;
using ir::Layout;
using ir::Node;
using ir::OpCode;
using ir::ReduceOp;
using ir::ValueId;

// Lanes of a row reduction, and outputs per block of a column reduction.
constexpr int kLanes = 16;
constexpr int kColumnBlock = 64;

class Emitter {
 public:
  explicit Emitter(const Kernel& kernel) : kernel_(kernel), nodes_(kernel) {}

  std::string run(const std::string& entry) {
    out_ << c_prelude();
    out_ << nodes_.vector_math();
    out_ << nodes_.special_preludes();
    out_ << "\n/*\n" << ir::print(kernel_) << "*/\n";
    if (fixed() && kernel_.kind == ir::KernelKind::kPointwise) {
      emit_fixed_shape_pointwise(entry);
      return out_.str();
    }
    out_ << "KILN_EXPORT " << (kernel_.kind != ir::KernelKind::kPointwise ? "KILN_REDUCTION " : "")
         << "void " << entry
         << "(const kiln_launch_args* launch, int64_t begin, int64_t end) {\n";
    // A local copy of the launch arguments: stores through the output
    // pointers cannot alias it, so the compiler keeps sizes and strides in
    // registers instead of reloading them after every store.
    out_ << "  const kiln_launch_args local = *launch;\n  const kiln_launch_args* const args = &local;\n";
    if (kernel_.kind == ir::KernelKind::kPointwise) {
      emit_pointwise();
    } else if (kernel_.kind == ir::KernelKind::kRow) {
      emit_row_kernel();
    } else if (kernel_.reduction.op == ReduceOp::kArgMax || kernel_.reduction.op == ReduceOp::kArgMin) {
      kernel_.reduction.inner ? emit_arg_reduction_inner() : emit_reduction_outer();
    } else {
      kernel_.reduction.inner ? emit_reduction_inner() : emit_reduction_outer();
    }
    out_ << "}\n";
    return out_.str();
  }

 private:
  int input_count() const { return static_cast<int>(kernel_.inputs.size()); }
  int operand_count() const { return input_count() + static_cast<int>(kernel_.outputs.size()); }
  const ir::Operand& operand(int index) const {
    return index < input_count() ? kernel_.inputs[index] : kernel_.outputs[index - input_count()];
  }
  std::string pointer(int index) const { return pointer_name(index); }
  std::string offset(int index) const { return "o" + std::to_string(index); }
  std::string stride(int index) const { return stride_name(index); }

  bool fixed() const { return !kernel_.fixed_shape.empty(); }
  // The size of `dim` and operand `index`'s stride through it, as C: a
  // literal in a kernel of fixed shape, else the launch argument.
  std::string size_at(int dim) const {
    if (fixed()) return std::to_string(kernel_.fixed_shape.sizes[dim]);
    return "args->sizes[" + std::to_string(dim) + "]";
  }
  // Whether some operand of a fixed-shape kernel steps one element at a time
  // along dim 0 (or dim 0 is a single element).
  bool row_contiguous_anywhere() const {
    if (kernel_.fixed_shape.sizes.empty() || kernel_.fixed_shape.sizes[0] <= 1) return true;
    for (const std::vector<int64_t>& strides : kernel_.fixed_shape.strides) {
      if (!strides.empty() && std::abs(strides[0]) == 1) return true;
    }
    return false;
  }
  std::string stride_at(int index, int dim) const {
    if (fixed()) return "(int64_t)" + std::to_string(kernel_.fixed_shape.strides[index][dim]);
    return "args->strides[" + std::to_string(index) + "][" + std::to_string(dim) + "]";
  }

  std::string element(int index, const std::string& position) const { return nodes_.element(index, position); }
  std::string expression(const Node& node, const std::string& position, const std::string& linear) const {
    return nodes_.expression(node, position, linear);
  }

  // Declares pointers (and strides of strided operands) for every operand from
  // their offsets o<k>.
  void declare_pointers(const std::string& indent, int vector_dim) {
    for (int index = 0; index < operand_count(); ++index) {
      bool is_input = index < input_count();
      out_ << indent << (is_input ? "const " : "") << storage_type(operand(index).dtype) << "* "
           << pointer(index) << " = (" << (is_input ? "const " : "")
           << storage_type(operand(index).dtype) << "*)args->data[" << index << "] + "
           << offset(index) << ";\n";
    }
  }

  void declare_strides(int vector_dim) {
    for (int index = 0; index < operand_count(); ++index) {
      if (operand(index).layout == Layout::kStrided) {
        out_ << "  const int64_t " << stride(index) << " = " << stride_at(index, vector_dim) << ";\n";
      }
    }
  }

  // Adds `coordinate * stride` along `dim` to every operand's offset.
  void add_offsets(const std::string& indent, const std::string& coordinate, int dim,
                   bool inputs_only) {
    int count = inputs_only ? input_count() : operand_count();
    for (int index = 0; index < count; ++index) {
      out_ << indent << offset(index) << " += " << coordinate << " * " << stride_at(index, dim) << ";\n";
    }
  }

  void zero_offsets(const std::string& indent, const std::string& initial_prefix = "") {
    for (int index = 0; index < operand_count(); ++index) {
      out_ << indent << "int64_t " << offset(index) << " = 0;\n";
    }
  }

  // Emits the nodes marked in `needed`, in order, as constant C declarations.
  // `position` is the C expression of the current position along the vectorised
  // dim; `linear` of the current position in the whole iteration space.
  // In a row kernel's pass, nodes marked in reads_buffer_ are read from the
  // row buffer an earlier pass wrote (writes_buffer_) instead of computed.
  void emit_nodes(const std::vector<bool>& needed, const std::string& indent,
                  const std::string& position, const std::string& linear) {
    for (size_t id = 0; id < kernel_.nodes.size(); ++id) {
      if (!needed[id]) continue;
      const Node& node = kernel_.nodes[id];
      const std::string name = value(static_cast<ValueId>(id));
      const std::string slot = "row_" + name + "[q * length + " + position + "]";
      if (!reads_buffer_.empty() && reads_buffer_[id]) {
        out_ << indent << "const " << compute_type(node.dtype) << " " << name << " = " << slot << ";\n";
        continue;
      }
      out_ << indent << "const " << compute_type(node.dtype) << " " << name << " = "
           << expression(node, position, linear) << ";\n";
      if (!writes_buffer_.empty() && writes_buffer_[id]) out_ << indent << slot << " = " << name << ";\n";
    }
  }

  std::vector<bool> reached_from(const std::vector<ValueId>& roots) const {
    std::vector<bool> reached(kernel_.nodes.size(), false);
    std::vector<ValueId> stack(roots.begin(), roots.end());
    while (!stack.empty()) {
      ValueId id = stack.back();
      stack.pop_back();
      if (reached[id]) continue;
      reached[id] = true;
      const Node& node = kernel_.nodes[id];
      for (int slot = 0; slot < ir::opcode_arity(node.op); ++slot) stack.push_back(node.args[slot]);
    }
    return reached;
  }

  // Stores every output, or those marked in `which`.
  void emit_stores(const std::string& indent, const std::string& position,
                   const std::vector<bool>* which = nullptr) {
    for (size_t output = 0; output < kernel_.outputs.size(); ++output) {
      if (which != nullptr && !(*which)[output]) continue;
      int index = input_count() + static_cast<int>(output);
      ValueId result = kernel_.results[output];
      DType storage = kernel_.outputs[output].dtype;
      DType from = kernel_.nodes[result].dtype;
      std::string target = element(index, position);
      ValueId offset = kernel_.store_offsets[output];
      if (offset != ir::kNoValue) target.insert(target.size() - 1, " + " + value(offset));
      if (!kernel_.store_accumulates[output]) {
        out_ << indent << target << " = " << store_conversion(storage, from, value(result)) << ";\n";
        continue;
      }
      // Accumulate in the compute dtype of the output, then round once.
      DType compute = ir::compute_dtype(storage);
      std::string sum = convert(load_conversion(storage, target), compute, compute) + " + " +
                        convert(value(result), from, compute);
      if (storage == DType::kBool) sum = load_conversion(storage, target) + " | " + convert(value(result), from, DType::kBool);
      out_ << indent << target << " = " << store_conversion(storage, compute, "(" + sum + ")") << ";\n";
    }
  }

  // Decomposes `position` (a C variable) over dims [first, last) into
  // coordinates c<d>, adding each to the operands' offsets.
  void decompose(const std::string& indent, const std::string& position, int first, int last,
                 bool inputs_only) {
    if (first >= last) return;
    out_ << indent << "int64_t rest = " << position << ";\n";
    for (int dim = first; dim < last; ++dim) {
      std::string coordinate = "c" + std::to_string(dim);
      out_ << indent << "const int64_t " << coordinate << " = rest % " << size_at(dim) << ";\n";
      out_ << indent << "rest /= " << size_at(dim) << ";\n";
      add_offsets(indent, coordinate, dim, inputs_only);
    }
    out_ << indent << "(void)rest;\n";
  }

  // The start of one step `q` over the reduced dims (from `first`): each
  // input's offset there, and its pointer p<k> to it.
  // (and outputs too when `outputs`, for row kernels that store elements).
  void emit_reduced_step_pointers(int first, const std::string& indent, bool outputs = false) {
    const int count = outputs ? operand_count() : input_count();
    for (int index = 0; index < count; ++index) {
      out_ << indent << "int64_t " << offset(index) << "_row = " << offset(index) << ";\n";
    }
    emit_row_offsets(first, count);
    for (int index = 0; index < count; ++index) {
      const bool input = index < input_count();
      const std::string constness = input ? "const " : "";
      out_ << indent << constness << storage_type(operand(index).dtype) << "* " << pointer(index) << " = ("
           << constness << storage_type(operand(index).dtype) << "*)args->data[" << index << "] + " << offset(index)
           << "_row;\n";
    }
  }

  // Offsets o<k>_row of the first `count` operands at reduced row `q`,
  // decomposed over dims [first, rank) (declared by the caller from o<k>).
  void emit_row_offsets(int first, int count) {
    out_ << "      {\n        int64_t rest = q;\n";
    for (int dim = first; dim < kernel_.rank; ++dim) {
      out_ << "        {\n          const int64_t coordinate = rest % " << size_at(dim) << ";\n";
      out_ << "          rest /= " << size_at(dim) << ";\n";
      for (int index = 0; index < count; ++index) {
        out_ << "          " << offset(index) << "_row += coordinate * " << stride_at(index, dim) << ";\n";
      }
      out_ << "        }\n";
    }
    out_ << "        (void)rest;\n      }\n";
  }

  // The rows of a pointwise range: each operand's offset of the row's first
  // element (o<k>_base) and the coordinates k<d> of dims 1.. are worked out
  // once, at `begin`, then stepped from row to row like an odometer. Dividing
  // the position for every row cost more than the row itself when rows are
  // short (a transposed copy with an 8-element inner dim took 10 us for 4096
  // elements).
  void emit_pointwise() {
    declare_strides(0);
    const int rank = kernel_.rank;
    out_ << "  const int64_t size0 = " << size_at(0) << ";\n";
    out_ << "  int64_t position = begin;\n";
    out_ << "  int64_t first0 = begin % size0;\n";
    for (int index = 0; index < operand_count(); ++index) out_ << "  int64_t " << offset(index) << "_base = 0;\n";
    for (int dim = 1; dim < rank; ++dim) out_ << "  int64_t k" << dim << " = 0;\n";
    if (rank > 1) {
      out_ << "  {\n    int64_t rest = begin / size0;\n";
      for (int dim = 1; dim < rank; ++dim) {
        out_ << "    k" << dim << " = rest % " << size_at(dim) << ";\n";
        out_ << "    rest /= " << size_at(dim) << ";\n";
        for (int index = 0; index < operand_count(); ++index) {
          out_ << "    " << offset(index) << "_base += k" << dim << " * " << stride_at(index, dim) << ";\n";
        }
      }
      out_ << "  }\n";
    }
    out_ << "  while (position < end) {\n";
    for (int dim = 1; dim < rank; ++dim) out_ << "    const int64_t c" << dim << " = k" << dim << "; (void)c" << dim << ";\n";
    for (int index = 0; index < operand_count(); ++index) {
      out_ << "    const int64_t " << offset(index) << " = " << offset(index) << "_base + first0 * "
           << stride_at(index, 0) << ";\n";
    }
    out_ << "    int64_t count = size0 - first0;\n";
    out_ << "    if (count > end - position) count = end - position;\n";
    declare_pointers("    ", 0);
    out_ << "    for (int64_t j = 0; j < count; ++j) {\n";
    out_ << "      const int64_t c0 = first0 + j; (void)c0;\n";
    emit_pointwise_element("      ", "(position + j)");
    out_ << "    }\n";
    out_ << "    position += count;\n";
    out_ << "    first0 = 0;\n";
    emit_next_row("    ", 1);
    out_ << "  }\n";
  }

  // The nodes and stores of a pointwise kernel at element j of a row;
  // `linear` is the element's position in the whole iteration space.
  void emit_pointwise_element(const std::string& indent, const std::string& linear) {
    std::vector<ValueId> roots = kernel_.results;
    for (ValueId offset : kernel_.store_offsets) {
      if (offset != ir::kNoValue) roots.push_back(offset);
    }
    emit_nodes(reached_from(roots), indent, "j", linear);
    emit_stores(indent, "j");
  }

  // Steps the odometer of emit_pointwise to the next row from dim `dim` on:
  // one step along it, and a carry into the next dim when it wraps. The last
  // dim needs no wrap: past it the range has ended.
  void emit_next_row(const std::string& indent, int dim) {
    if (dim >= kernel_.rank) return;
    out_ << indent << "++k" << dim << ";\n";
    for (int index = 0; index < operand_count(); ++index) {
      out_ << indent << offset(index) << "_base += " << stride_at(index, dim) << ";\n";
    }
    if (dim + 1 >= kernel_.rank) return;
    out_ << indent << "if (k" << dim << " == " << size_at(dim) << ") {\n";
    out_ << indent << "  k" << dim << " = 0;\n";
    for (int index = 0; index < operand_count(); ++index) {
      out_ << indent << "  " << offset(index) << "_base -= " << size_at(dim) << " * " << stride_at(index, dim)
           << ";\n";
    }
    emit_next_row(indent + "  ", dim + 1);
    out_ << indent << "}\n";
  }

  // A pointwise kernel of fixed shape. Whole rows (runs of dim 0) inside
  // [begin, end) take a loop nest whose trip counts and strides are literals,
  // which GCC vectorises even for short strided rows, across rows where a row
  // is shorter than a vector (a 2x2 max pool's four stride-2 inputs, 8-element
  // rows: 50-58 us with runtime strides, 5 us fixed, in a C harness). Both literal trip counts and
  // literal strides are needed: either alone left it at 32-46 us. A range that
  // starts or ends inside a row (a thread's share) takes the odometer loop of
  // emit_pointwise for those partial rows.
  void emit_fixed_shape_pointwise(const std::string& entry) {
    const int rank = kernel_.rank;
    const std::string row = size_at(0);
    out_ << "static void kiln_partial_rows(const kiln_launch_args* const args, int64_t begin, int64_t end) {\n";
    emit_pointwise();
    out_ << "}\n";
    // Rows are walked a plane (all of dim 1) at a time: dims 2.. are
    // decomposed once per plane, and within it each offset is affine in c1,
    // which lets the C compiler vectorise across rows as well.
    out_ << "static void kiln_whole_rows(const kiln_launch_args* const args, int64_t row_begin, int64_t row_end) {\n";
    declare_strides(0);
    const std::string plane = rank > 1 ? size_at(1) : "1";
    out_ << "  int64_t r = row_begin;\n";
    out_ << "  while (r < row_end) {\n";
    out_ << "    const int64_t c1_begin = r % " << plane << ";\n";
    out_ << "    int64_t rest = r / " << plane << ";\n";
    for (int dim = 2; dim < rank; ++dim) {
      std::string coordinate = "c" + std::to_string(dim);
      out_ << "    const int64_t " << coordinate << " = rest % " << size_at(dim) << "; (void)" << coordinate << ";\n";
      out_ << "    rest /= " << size_at(dim) << ";\n";
    }
    out_ << "    (void)rest;\n";
    out_ << "    int64_t c1_end = " << plane << ";\n";
    out_ << "    if (c1_end - c1_begin > row_end - r) c1_end = c1_begin + (row_end - r);\n";
    for (int index = 0; index < operand_count(); ++index) {
      out_ << "    const int64_t " << offset(index) << "_plane = 0";
      for (int dim = 2; dim < rank; ++dim) out_ << " + c" << dim << " * " << stride_at(index, dim);
      out_ << ";\n";
    }
    out_ << "    for (int64_t c1 = c1_begin; c1 < c1_end; ++c1) {\n";
    for (int index = 0; index < operand_count(); ++index) {
      out_ << "      const int64_t " << offset(index) << " = " << offset(index) << "_plane";
      if (rank > 1) out_ << " + c1 * " << stride_at(index, 1);
      out_ << ";\n";
    }
    declare_pointers("      ", 0);
    // A row no operand steps through contiguously (a pool writing
    // channels-last from NCHW taps: stride-2 loads, stride-16 stores) stays a
    // loop. GCC unrolled its 8 iterations whole, and then neither the loop
    // around it (taps 1 KiB apart along the channels) nor the straight-line
    // code vectorised: 41 us a call in a C harness, 21 us as a vectorised loop.
    if (!row_contiguous_anywhere()) out_ << "      #pragma GCC unroll 1\n";
    out_ << "      for (int64_t j = 0; j < " << row << "; ++j) {\n";
    out_ << "        const int64_t c0 = j; (void)c0;\n";
    emit_pointwise_element("        ", "((r + (c1 - c1_begin)) * " + row + " + j)");
    out_ << "      }\n    }\n";
    out_ << "    r += c1_end - c1_begin;\n  }\n}\n";
    out_ << "KILN_EXPORT void " << entry << "(const kiln_launch_args* launch, int64_t begin, int64_t end) {\n";
    out_ << "  const kiln_launch_args local = *launch;\n  const kiln_launch_args* const args = &local;\n";
    out_ << "  const int64_t row_begin = (begin + " << row << " - 1) / " << row << ";\n";
    out_ << "  const int64_t row_end = end / " << row << ";\n";
    out_ << "  if (row_begin >= row_end) {\n    kiln_partial_rows(args, begin, end);\n    return;\n  }\n";
    out_ << "  if (begin < row_begin * " << row << ") kiln_partial_rows(args, begin, row_begin * " << row << ");\n";
    out_ << "  kiln_whole_rows(args, row_begin, row_end);\n";
    out_ << "  if (row_end * " << row << " < end) kiln_partial_rows(args, row_end * " << row << ", end);\n";
    out_ << "}\n";
  }

  // Offsets of the kept dims of output position `o`, then the reduced loops.
  // The start of a row reduction: `outer_count` (reduced dims past the
  // vectorised one) and `length` (the vectorised dim), then the loop over
  // outputs with each operand's offset at output `output`. Left open.
  void open_row_reduction(int kept) {
    declare_strides(kept);
    out_ << "  int64_t outer_count = 1;\n";
    for (int dim = kept + 1; dim < kernel_.rank; ++dim) out_ << "  outer_count *= " << size_at(dim) << ";\n";
    out_ << "  const int64_t length = " << size_at(kept) << ";\n";
    out_ << "  for (int64_t output = begin; output < end; ++output) {\n";
    zero_offsets("    ");
    out_ << "    {\n";
    decompose("      ", "output", 0, kept, false);
    out_ << "    }\n";
  }

  // Reduced dims are kept_rank..rank-1; kept_rank is the vectorised dim.
  void emit_reduction_inner() {
    const ReduceOp op = kernel_.reduction.op;
    const DType type = kernel_.nodes[kernel_.reduction.input].dtype;
    open_row_reduction(kernel_.kept_rank);
    out_ << "    " << compute_type(ir::reduce_accumulator_dtype(op, type)) << " accumulator;\n";
    emit_row_fold(op, kernel_.reduction.input, "accumulator", reached_from({kernel_.reduction.input}));
    emit_epilogue("    ", "0");
    out_ << "  }\n";
  }

  // One fold of the current row (inside open_row_reduction's loop) of
  // nodes[input] with `op`, assigned to `result` (declared by the caller).
  // `element_nodes` are computed at each element. Nothing is stored to an
  // output here: a store through an output pointer that may alias the
  // inputs kept GCC from vectorising the lanes (a layer norm's first pass
  // storing its residual sum: 6.5 us, 2.8 without).
  void emit_row_fold(ReduceOp op, ValueId input, const std::string& result, const std::vector<bool>& element_nodes) {
    const int kept = kernel_.kept_rank;
    const DType type = kernel_.nodes[input].dtype;
    const DType accumulator_type = ir::reduce_accumulator_dtype(op, type);
    out_ << "    {\n";
    const std::optional<VectorFold> vector_fold = vector_fold_of(op, accumulator_type);
    const int vectors = vector_fold ? kLanes / vector_fold->width : 0;
    // Scalar lanes the C compiler vectorises; with explicit vectors, one
    // scalar for the elements past the row's last whole block.
    const std::string tail = vector_fold ? "tail" : "lanes[0]";
    if (vector_fold) {
      out_ << "    " << compute_type(accumulator_type) << " tail = " << reduce_identity(op, accumulator_type)
           << ";\n";
    } else {
      out_ << "    " << compute_type(accumulator_type) << " lanes[" << kLanes << "];\n";
      out_ << "    for (int lane = 0; lane < " << kLanes << "; ++lane) lanes[lane] = "
           << reduce_identity(op, accumulator_type) << ";\n";
    }
    for (int part = 0; part < vectors; ++part) {
      out_ << "    " << vector_fold->type << " vector_lanes" << part << ";\n";
      out_ << "    for (int lane = 0; lane < " << vector_fold->width << "; ++lane) vector_lanes" << part
           << "[lane] = " << reduce_identity(op, accumulator_type) << ";\n";
    }
    // A computed element (not a plain load) of a sum or a product goes to
    // scalar lanes in one loop over all kLanes lanes, which GCC vectorises
    // whole, copied into the vectors before they fold: lane i still adds
    // elements i, i + kLanes, ... in order, and the vectors fold as before,
    // so the bits are those of the per-vector blocks. GCC 12 assembled each
    // block's lanes one by one instead (x * x summed over rows of 1024:
    // 2.4x the time of summing x).
    const ir::Node& element = kernel_.nodes[input];
    const bool direct = vector_fold && element.op == OpCode::kLoad &&
                        kernel_.inputs[element.integer].layout == ir::Layout::kContiguous &&
                        kernel_.inputs[element.integer].dtype == accumulator_type;
    const bool lane_array = vector_fold && !direct && (op == ReduceOp::kSum || op == ReduceOp::kProduct);
    if (lane_array) {
      out_ << "    " << compute_type(accumulator_type) << " lane_values[" << kLanes << "];\n";
      out_ << "    for (int lane = 0; lane < " << kLanes << "; ++lane) lane_values[lane] = "
           << reduce_identity(op, accumulator_type) << ";\n";
    }
    out_ << "    for (int64_t q = 0; q < outer_count; ++q) {\n";
    emit_reduced_step_pointers(kept + 1, "      ");
    std::string input_value = value(input);
    out_ << "      int64_t j = 0;\n";
    out_ << "      for (; j + " << kLanes << " <= length; j += " << kLanes << ") {\n";
    if (vector_fold) {
      // Each vector's elements are computed lane by lane (the compiler
      // vectorises that), then folded with one explicit vector operation.
      // A plain contiguous load of the accumulator's type is read as whole
      // vectors (GCC 12 assembles some lane-by-lane blocks element by element).
      if (lane_array) {
        out_ << "        for (int lane = 0; lane < " << kLanes << "; ++lane) {\n";
        emit_nodes(element_nodes, "          ", "j + lane", "0");
        out_ << "          " << reduce_step(op, accumulator_type, "lane_values[lane]", convert(input_value, type, accumulator_type))
             << "\n        }\n";
      }
      for (int part = 0; part < (lane_array ? 0 : vectors); ++part) {
        const std::string first = "j + " + std::to_string(part * vector_fold->width);
        out_ << "        {\n          " << vector_fold->type << " block;\n";
        if (direct) {
          out_ << "          __builtin_memcpy(&block, " << pointer(static_cast<int>(element.integer)) << " + "
               << first << ", sizeof block);\n";
        } else {
          out_ << "          for (int lane = 0; lane < " << vector_fold->width << "; ++lane) {\n";
          emit_nodes(element_nodes, "            ", first + " + lane", "0");
          out_ << "            block[lane] = " << convert(input_value, type, accumulator_type) << ";\n";
          out_ << "          }\n";
        }
        out_ << "          vector_lanes" << part << " = " << vector_fold->function << "(vector_lanes" << part << ", block);\n";
        out_ << "        }\n";
      }
      out_ << "      }\n";
    } else {
      out_ << "        for (int lane = 0; lane < " << kLanes << "; ++lane) {\n";
      emit_nodes(element_nodes, "          ", "j + lane", "0");
      out_ << "          " << reduce_step(op, accumulator_type, "lanes[lane]", convert(input_value, type, accumulator_type)) << "\n";
      out_ << "        }\n      }\n";
    }
    out_ << "      for (; j < length; ++j) {\n";
    emit_nodes(element_nodes, "        ", "j", "0");
    out_ << "        " << reduce_step(op, accumulator_type, tail, convert(input_value, type, accumulator_type)) << "\n";
    out_ << "      }\n    }\n";
    // Explicit vectors fold by halves (lane i with lane i + 8, then i + 4,
    // ...): a few vector operations, where folding their lanes one by one
    // into a scalar cost more than a short row's whole loop (a max over rows
    // of 16: 4.3 against 17.6 us for 512 rows).
    if (vector_fold) {
      for (int part = 0; lane_array && part < vectors; ++part) {
        out_ << "    __builtin_memcpy(&vector_lanes" << part << ", lane_values + " << part * vector_fold->width
             << ", sizeof vector_lanes" << part << ");\n";
      }
      for (int part = 1; part < vectors; ++part) {
        out_ << "    vector_lanes0 = " << vector_fold->function << "(vector_lanes0, vector_lanes" << part << ");\n";
      }
      out_ << "    const " << compute_type(accumulator_type) << " folded = " << vector_fold->horizontal
           << "(vector_lanes0);\n";
      out_ << "    " << result << " = tail;\n";
      out_ << "    " << reduce_step(op, accumulator_type, result, "folded") << "\n";
    } else {
      out_ << "    " << result << " = lanes[0];\n";
      out_ << "    for (int lane = 1; lane < " << kLanes << "; ++lane) {\n";
      out_ << "      " << reduce_step(op, accumulator_type, result, "lanes[lane]") << "\n    }\n";
    }
    out_ << "    }\n";
  }

  // A row kernel: for each row, its stages in turn (emit_row_fold), each
  // followed by the row values it makes computable; then the outputs stored
  // once per row, and a last pass over the row that stores the others.
  //
  // An element value a later pass needs again is kept in a row buffer on the
  // stack when the buffers fit kRowBufferBytes, the way a persistent
  // reduction keeps its row in registers: a softmax's exponentials are
  // computed once, not in both the sum's pass and the division's
  // (recomputed, a causal softmax took 1.9x as long as five separate
  // kernels). Loads are read again instead. With a fixed shape the choice is
  // made here; otherwise the buffers hold as many elements as fit, and each
  // row takes the buffered body when it fits them and the recomputing one
  // when it does not.
  static constexpr int64_t kRowBufferBytes = 32 << 10;

  // Which nodes each pass computes and reads from buffers, and which are
  // buffered (all false without `buffering`).
  struct RowPlan {
    std::vector<std::vector<bool>> computed, reads;
    std::vector<bool> buffered;
    int64_t buffered_bytes = 0;  // per row element, all buffers together
  };

  RowPlan plan_row(bool buffering, const std::vector<bool>& element, const std::vector<int>& pass) const {
    const size_t node_count = kernel_.nodes.size();
    const int stage_count = static_cast<int>(kernel_.stages.size());
    RowPlan plan;
    plan.computed.resize(stage_count + 1);
    plan.reads.resize(stage_count + 1);
    plan.buffered.assign(node_count, false);
    std::vector<bool> before(node_count, false);
    for (int which = 0; which <= stage_count; ++which) {
      std::vector<ValueId> stack;
      if (which < stage_count) stack.push_back(kernel_.stages[which].input);
      for (size_t output = 0; output < kernel_.outputs.size(); ++output) {
        if (pass[output] == which) stack.push_back(kernel_.results[output]);
      }
      std::vector<bool>& computed = plan.computed[which];
      std::vector<bool>& reads = plan.reads[which];
      computed.assign(node_count, false);
      reads.assign(node_count, false);
      while (!stack.empty()) {
        const ValueId id = stack.back();
        stack.pop_back();
        if (!element[id] || computed[id] || reads[id]) continue;
        if (buffering && before[id] && kernel_.nodes[id].op != OpCode::kLoad) {
          reads[id] = plan.buffered[id] = true;
          continue;
        }
        computed[id] = true;
        const Node& node = kernel_.nodes[id];
        for (int slot = 0; slot < ir::opcode_arity(node.op); ++slot) stack.push_back(node.args[slot]);
      }
      for (size_t id = 0; id < node_count; ++id) before[id] = before[id] || computed[id];
    }
    for (size_t id = 0; id < node_count; ++id) {
      if (plan.buffered[id]) plan.buffered_bytes += ir::dtype_size(kernel_.nodes[id].dtype);
    }
    return plan;
  }

  void emit_row_kernel() {
    const size_t node_count = kernel_.nodes.size();
    const int stage_count = static_cast<int>(kernel_.stages.size());
    // element[i]: node i reads a tensor element; after[i]: 1 + the last
    // stage it reads (0: none).
    std::vector<bool> element(node_count, false);
    std::vector<int> after(node_count, 0);
    for (size_t id = 0; id < node_count; ++id) {
      const Node& node = kernel_.nodes[id];
      element[id] = node.op == OpCode::kLoad || node.op == OpCode::kIndexedLoad;
      if (node.op == OpCode::kAccumulator) after[id] = static_cast<int>(node.integer) + 1;
      for (int slot = 0; slot < ir::opcode_arity(node.op); ++slot) {
        element[id] = element[id] || element[node.args[slot]];
        after[id] = std::max(after[id], after[node.args[slot]]);
      }
    }
    const size_t output_count = kernel_.outputs.size();
    // The pass storing each output: the last (stage_count), or -1 for the
    // row values stored once per row (the outputs broadcast along the row).
    std::vector<int> pass(output_count, -1);
    for (size_t output = 0; output < output_count; ++output) {
      const ValueId result = kernel_.results[output];
      if (element[result] || kernel_.outputs[output].layout != Layout::kBroadcast) pass[output] = stage_count;
    }
    const RowPlan buffered = plan_row(true, element, pass);
    const RowPlan recomputed = plan_row(false, element, pass);
    int64_t capacity = 0;  // row elements the buffers hold
    if (buffered.buffered_bytes > 0) {
      capacity = kRowBufferBytes / buffered.buffered_bytes;
      if (fixed()) {
        int64_t row_elements = 1;
        for (int dim = kernel_.kept_rank; dim < kernel_.rank; ++dim) row_elements *= kernel_.fixed_shape.sizes[dim];
        capacity = row_elements <= capacity ? row_elements : 0;
      }
    }
    for (size_t id = 0; id < node_count && capacity > 0; ++id) {
      if (buffered.buffered[id]) {
        out_ << "  " << compute_type(kernel_.nodes[id].dtype) << " row_" << value(static_cast<ValueId>(id)) << "["
             << capacity << "];\n";
      }
    }
    open_row_reduction(kernel_.kept_rank);
    if (capacity == 0) {
      emit_row_body(recomputed, element, after, pass);
    } else if (fixed()) {
      emit_row_body(buffered, element, after, pass);
    } else {
      out_ << "    if (outer_count * length <= " << capacity << ") {\n";
      emit_row_body(buffered, element, after, pass);
      out_ << "    } else {\n";
      emit_row_body(recomputed, element, after, pass);
      out_ << "    }\n";
    }
    out_ << "  }\n";
  }

  // One row's stages, stores per row and last pass, as `plan` says, inside
  // open_row_reduction's loop.
  void emit_row_body(const RowPlan& plan, const std::vector<bool>& element, const std::vector<int>& after,
                     const std::vector<int>& pass) {
    const size_t node_count = kernel_.nodes.size();
    const int stage_count = static_cast<int>(kernel_.stages.size());
    const size_t output_count = kernel_.outputs.size();
    auto stored_in = [&](int which) {
      std::vector<bool> marked(output_count, false);
      for (size_t output = 0; output < output_count; ++output) marked[output] = pass[output] == which;
      return marked;
    };
    std::vector<bool> defined(node_count, false);
    // Declares the row values that need no stage past `ready`.
    auto define_row_values = [&](int ready) {
      std::vector<bool> now(node_count, false);
      for (size_t id = 0; id < node_count; ++id) now[id] = !element[id] && !defined[id] && after[id] <= ready;
      emit_nodes(now, "    ", "0", "0");
      for (size_t id = 0; id < node_count; ++id) defined[id] = defined[id] || now[id];
    };
    // Before pass `which`: which nodes it writes to and reads from buffers.
    auto buffer_pass = [&](int which) {
      reads_buffer_ = plan.reads[which];
      writes_buffer_.assign(node_count, false);
      for (size_t id = 0; id < node_count; ++id) {
        bool first = plan.computed[which][id];
        for (int earlier = 0; earlier < which; ++earlier) first = first && !plan.computed[earlier][id];
        writes_buffer_[id] = plan.buffered[id] && first;
      }
    };
    auto pass_nodes = [&](int which) {
      std::vector<bool> nodes = plan.computed[which];
      for (size_t id = 0; id < node_count; ++id) nodes[id] = nodes[id] || plan.reads[which][id];
      return nodes;
    };
    define_row_values(0);
    for (int stage = 0; stage < stage_count; ++stage) {
      const ir::Reduction& reduction = kernel_.stages[stage];
      const DType type = ir::reduce_accumulator_dtype(reduction.op, kernel_.nodes[reduction.input].dtype);
      const std::string result = "accumulator" + std::to_string(stage);
      out_ << "    " << compute_type(type) << " " << result << ";\n";
      buffer_pass(stage);
      emit_row_fold(reduction.op, reduction.input, result, pass_nodes(stage));
      define_row_values(stage + 1);
    }
    const std::vector<bool> per_row = stored_in(-1);
    for (size_t output = 0; output < output_count; ++output) {
      if (!per_row[output]) continue;
      const int index = input_count() + static_cast<int>(output);
      out_ << "    " << storage_type(operand(index).dtype) << "* " << pointer(index) << " = ("
           << storage_type(operand(index).dtype) << "*)args->data[" << index << "] + " << offset(index) << ";\n";
    }
    emit_stores("    ", "0", &per_row);
    const std::vector<bool> last = stored_in(stage_count);
    if (std::find(last.begin(), last.end(), true) != last.end()) {
      buffer_pass(stage_count);
      out_ << "    for (int64_t q = 0; q < outer_count; ++q) {\n";
      emit_reduced_step_pointers(kernel_.kept_rank + 1, "      ", true);
      out_ << "      for (int64_t j = 0; j < length; ++j) {\n";
      emit_nodes(pass_nodes(stage_count), "        ", "j", "0");
      emit_stores("        ", "j", &last);
      out_ << "      }\n    }\n";
    }
    reads_buffer_.clear();
    writes_buffer_.clear();
  }

  // Output pointers at the output position, then epilogue and stores.
  void emit_epilogue(const std::string& indent, const std::string& position) {
    for (int index = input_count(); index < operand_count(); ++index) {
      out_ << indent << storage_type(operand(index).dtype) << "* " << pointer(index) << " = ("
           << storage_type(operand(index).dtype) << "*)args->data[" << index << "] + " << offset(index) << ";\n";
    }
    emit_nodes(reached_from(kernel_.results), indent, position, "0");
    emit_stores(indent, position);
  }

  // argmax/argmin along rows: a sequential scan (the first extreme wins).
  void emit_arg_reduction_inner() {
    const int kept = kernel_.kept_rank;
    DType type = kernel_.nodes[kernel_.reduction.input].dtype;
    ReduceOp op = kernel_.reduction.op;
    open_row_reduction(kept);
    out_ << "    " << compute_type(type) << " accumulator = " << reduce_identity(op, type) << ";\n";
    out_ << "    int64_t best_index = -1;\n";
    out_ << "    for (int64_t q = 0; q < outer_count; ++q) {\n";
    emit_reduced_step_pointers(kept + 1, "      ");
    out_ << "      for (int64_t j = 0; j < length; ++j) {\n";
    emit_nodes(reached_from({kernel_.reduction.input}), "        ", "j", "0");
    std::string element_value = value(kernel_.reduction.input);
    out_ << "        if (" << arg_better(op, type, element_value, "accumulator", "best_index") << ") {\n";
    out_ << "          accumulator = " << element_value << "; best_index = q * length + j;\n";
    out_ << "        }\n      }\n    }\n";
    out_ << "    if (best_index < 0) best_index = 0;\n";
    emit_epilogue("    ", "0");
    out_ << "  }\n";
  }

  // A whole block of a fixed-shape column reduction (a run of dim 0, or
  // kColumnBlock of it: every block but those at a thread's range ends) with
  // its outputs in `vectors` explicit vectors. The elements of each vector
  // are computed lane by lane, then folded with one vector operation. With
  // the block in an array the C compiler unrolled the reduced loop and
  // vectorised across it (attention's 32 16x8 by 8x16 products as a
  // reduction: 54 us, against 17 with a runtime trip count and 14 for MKL).
  void emit_column_vector_block(const VectorFold& fold, int64_t vectors) {
    const int kept = kernel_.kept_rank;
    DType type = kernel_.nodes[kernel_.reduction.input].dtype;
    ReduceOp op = kernel_.reduction.op;
    DType accumulator_type = ir::reduce_accumulator_dtype(op, type);
    const std::string identity = reduce_identity(op, accumulator_type);
    for (int64_t part = 0; part < vectors; ++part) {
      out_ << "      " << fold.type << " vector_block" << part << ";\n";
      out_ << "      for (int lane = 0; lane < " << fold.width << "; ++lane) vector_block" << part
           << "[lane] = " << identity << ";\n";
    }
    out_ << "      for (int64_t q = 0; q < reduced_count; ++q) {\n";
    emit_reduced_step_pointers(kept, "        ");
    const std::vector<bool> element_nodes = reached_from({kernel_.reduction.input});
    const std::string element_value = convert(value(kernel_.reduction.input), type, accumulator_type);
    for (int64_t part = 0; part < vectors; ++part) {
      const std::string first = std::to_string(part * fold.width);
      out_ << "        {\n          " << fold.type << " element;\n";
      out_ << "          for (int lane = 0; lane < " << fold.width << "; ++lane) {\n";
      emit_nodes(element_nodes, "            ", first + " + lane", "0");
      out_ << "            element[lane] = " << element_value << ";\n          }\n";
      out_ << "          vector_block" << part << " = " << fold.function << "(vector_block" << part << ", element);\n";
      out_ << "        }\n";
    }
    out_ << "      }\n";
    for (int index = input_count(); index < operand_count(); ++index) {
      out_ << "      " << storage_type(operand(index).dtype) << "* " << pointer(index) << " = ("
           << storage_type(operand(index).dtype) << "*)args->data[" << index << "] + " << offset(index) << ";\n";
    }
    for (int64_t part = 0; part < vectors; ++part) {
      const std::string first = std::to_string(part * fold.width);
      out_ << "      for (int lane = 0; lane < " << fold.width << "; ++lane) {\n";
      out_ << "        const int64_t j = " << first << " + lane;\n";
      out_ << "        const " << compute_type(accumulator_type) << " accumulator = vector_block" << part
           << "[lane];\n";
      emit_nodes(reached_from(kernel_.results), "        ", "j", "0");
      emit_stores("        ", "j");
      out_ << "      }\n";
    }
  }

  // Column reductions: dim 0 is kept and vectorised; a block of up to
  // kColumnBlock neighbouring outputs accumulates together.
  void emit_reduction_outer() {
    const int kept = kernel_.kept_rank;
    DType type = kernel_.nodes[kernel_.reduction.input].dtype;
    ReduceOp op = kernel_.reduction.op;
    bool arg = op == ReduceOp::kArgMax || op == ReduceOp::kArgMin;
    DType accumulator_type = ir::reduce_accumulator_dtype(op, type);
    declare_strides(0);
    out_ << "  int64_t reduced_count = 1;\n";
    for (int dim = kept; dim < kernel_.rank; ++dim) out_ << "  reduced_count *= " << size_at(dim) << ";\n";
    out_ << "  const int64_t size0 = " << size_at(0) << ";\n";
    out_ << "  int64_t position = begin;\n";
    out_ << "  while (position < end) {\n";
    out_ << "    const int64_t first0 = position % size0;\n";
    out_ << "    const int64_t outer = position / size0;\n";
    zero_offsets("    ");
    add_offsets("    ", "first0", 0, false);
    out_ << "    {\n";
    decompose("      ", "outer", 1, kept, false);
    out_ << "    }\n";
    out_ << "    int64_t count = size0 - first0;\n";
    out_ << "    if (count > end - position) count = end - position;\n";
    out_ << "    if (count > " << kColumnBlock << ") count = " << kColumnBlock << ";\n";
    const std::optional<VectorFold> vector_fold = vector_fold_of(op, accumulator_type);
    const int64_t full = fixed() ? std::min<int64_t>(kernel_.fixed_shape.sizes[0], kColumnBlock) : 0;
    const bool vector_block = !arg && vector_fold && full > 0 && full % vector_fold->width == 0;
    if (vector_block) {
      out_ << "    if (count == " << full << ") {\n";
      emit_column_vector_block(*vector_fold, full / vector_fold->width);
      out_ << "      position += count;\n      continue;\n    }\n";
    }
    out_ << "    " << compute_type(accumulator_type) << " block[" << kColumnBlock << "];\n";
    if (arg) out_ << "    int64_t block_index[" << kColumnBlock << "];\n";
    out_ << "    for (int64_t j = 0; j < count; ++j) { block[j] = " << reduce_identity(op, accumulator_type) << ";"
         << (arg ? " block_index[j] = -1;" : "") << " }\n";
    out_ << "    for (int64_t q = 0; q < reduced_count; ++q) {\n";
    emit_reduced_step_pointers(kept, "      ");
    out_ << "      for (int64_t j = 0; j < count; ++j) {\n";
    emit_nodes(reached_from({kernel_.reduction.input}), "        ", "j", "0");
    std::string element_value = convert(value(kernel_.reduction.input), type, accumulator_type);
    if (arg) {
      out_ << "        if (" << arg_better(op, type, element_value, "block[j]", "block_index[j]") << ") {\n";
      out_ << "          block[j] = " << element_value << "; block_index[j] = q;\n        }\n";
    } else {
      out_ << "        " << reduce_step(op, accumulator_type, "block[j]", element_value) << "\n";
    }
    out_ << "      }\n    }\n";
    for (int index = input_count(); index < operand_count(); ++index) {
      out_ << "    " << storage_type(operand(index).dtype) << "* " << pointer(index) << " = ("
           << storage_type(operand(index).dtype) << "*)args->data[" << index << "] + " << offset(index) << ";\n";
    }
    out_ << "    for (int64_t j = 0; j < count; ++j) {\n";
    out_ << "      const " << compute_type(accumulator_type) << " accumulator = block[j];\n";
    if (arg) out_ << "      const int64_t best_index = block_index[j] < 0 ? 0 : block_index[j];\n";
    emit_nodes(reached_from(kernel_.results), "      ", "j", "0");
    emit_stores("      ", "j");
    out_ << "    }\n";
    out_ << "    position += count;\n";
    out_ << "  }\n";
  }

  const Kernel& kernel_;
  const NodeExpressions nodes_;
  std::ostringstream out_;
  std::vector<bool> reads_buffer_, writes_buffer_;  // row kernels: see emit_nodes
};

}  // namespace

StatusOr<CSource> generate_c(const ir::Kernel& kernel) {
  KILN_RETURN_IF_ERROR(ir::verify(kernel));
  CSource source;
  source.entry_symbol = "kiln_kernel";
  source.text = Emitter(kernel).run(source.entry_symbol);
  return source;
}

}  // namespace kiln::codegen
