// HeldRegion: pointwise ops the host dispatched but adaptive eager has not
// submitted yet (adaptive_eager.h), and the one kernel that computes them all.
//
// Every op of a region iterates over the same index space (rank and sizes,
// after TensorIterator coalesced and ordered it), so position p of one op
// meets position p of every other. The operands of all ops are gathered into
// buffers: two operands are one buffer when they have the same address,
// dtype and strides, hence the same element at every position. A value an op
// stores into a buffer that a later op reads is then handed over inside the
// fused kernel, rounded to the buffer's dtype as the store and load would
// round it: the fused kernel computes what the ops compute one by one, bit
// for bit (docs/design/adaptive_eager.md says why, node by node).
//
// An op may not join when one of its operands overlaps a buffer of the region
// without being that buffer, and one of the two is written (an in-place write
// through another view, a read of a transposed result): the fused kernel would
// reorder those accesses. It also may not join past the launch limits
// (ir::kMaxOperands operands, ir::kMaxScalars scalars) or kMaxOps ops.
//
// The region keeps each operand's storage alive (one hold per storage) until
// its work has run, so no address in it can be reused while it is held. At
// submission, a buffer the region wrote is stored only if something outside
// the region still holds its storage (storage_alive()): intermediates no
// tensor can reach are computed in registers and never written.
//
// Ownership and threads: a plain value, guarded by its owner's lock.
#pragma once

#include <ATen/TensorIterator.h>
#include <c10/core/Storage.h>
#include <c10/util/FunctionRef.h>
#include <c10/util/SmallVector.h>

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kiln/aten/compiled/launch/kernel_launch.h"
#include "kiln/ir/builder.h"
#include "kiln/ir/kernel.h"

namespace kiln::torch_integration::adaptive {

// One op's kernel as its eager launch built it, with what adaptive eager
// needs to know about it, shared by every held launch of its signature.
struct OpKernel {
  std::string signature;  // the eager kernel's signature (kernel_launch.h)
  ir::Kernel kernel;
  bool fusable = false;  // plain loads, scalars and arithmetic; one store per output
  // Set once a region or an unheld run of ops this op began took a second
  // op (or a reduction): from then on the op opens a region even on a device
  // about to run dry (adaptive_eager.cc).
  mutable std::atomic<bool> begins_chains{false};
  // Set once a region this op opened ended with it alone (submitted by the
  // program, not cut short by a device running dry): until it begins a chain,
  // the op no longer opens a region, as holding it costs the host and fuses
  // nothing (adaptive_eager.cc).
  mutable std::atomic<bool> ends_alone{false};
};

// One held launch.
struct HeldOp {
  const char* op_name = nullptr;
  std::shared_ptr<const OpKernel> op;
  KernelEntry entry = nullptr;  // the op's own kernel, for running it unfused
  LaunchArgs args{};
  compiled::LaunchShape shape;
  c10::SmallVector<int, 6> buffers;  // buffer of each kernel operand, inputs then outputs
  int first_scalar = 0;              // the region's scalar slot of the op's slot 0
  int rank = 0;                      // of the op's own index space (args)
};

// The storage of each operand of a launch (kernel operand order).
using OperandStorage = c10::function_ref<const c10::Storage&(size_t operand)>;

// A reduction held behind a region's ops, reading a buffer they wrote: when
// nothing else the ops wrote is still held at submission, the ops become the
// reduction's prologue, computed per element inside its loops, and the buffer
// is never stored. The reduction keeps its own layout (kernel dims, lanes,
// thread split) so it folds the same values in the same order as alone.
struct HeldReduction {
  const char* op_name = nullptr;
  std::shared_ptr<const OpKernel> op;  // kind kReduction
  KernelEntry entry = nullptr;         // the reduction's own kernel
  LaunchArgs args{};
  compiled::LaunchShape shape;
  int rank = 0;
  // Per kernel input: the region buffer whose values it reads (-1: a tensor
  // the region does not write, loaded as the reduction loads it).
  c10::SmallVector<int, 4> sources;
  // Per region dim of the reduction's kernel dims: the region dim it steps
  // through and by how many positions (the map from the reduction's index
  // space to the region's), so that each region buffer gets strides over
  // the reduction's dims.
  int region_dim[ir::kMaxRank] = {};
  int64_t region_step[ir::kMaxRank] = {};
  // The region position of the reduction's first element (a reduction of a
  // slice starts inside the buffer).
  int64_t region_origin[ir::kMaxRank] = {};
  // Pointwise ops after the reduction over its output alone (and each
  // other's results): its epilogue, see HeldRegion::try_add.
  std::vector<HeldOp> epilogue;
  // Values those ops wrote: 0 is the reduction's output, then one per new
  // tensor an epilogue op wrote. All share the output's layout.
  struct Value {
    char* data = nullptr;
    ir::DType dtype = ir::DType::kFloat32;
    int storage = 0;  // index into HeldRegion::storages
  };
  std::vector<Value> values;
  int epilogue_scalars = 0;

  // Pointwise ops after the reduction over its input's elements (each
  // position one element of a row): its row ops, see HeldRegion::try_add.
  // With them the region runs as one row kernel (ir::KernelKind::kRow) that
  // folds each row as the reduction does, then computes the row ops along
  // it: the `x * rsqrt(...) * weight` of an RMSNorm. Their operands are laid
  // out over the reduction's kernel dims, each one of:
  struct RowOperand {
    enum Kind : uint8_t {
      kBuffer,  // a region buffer, with the value the region's ops left in it
      kValue,   // a value above, the same along the row
      kTensor,  // a row tensor below
    };
    Kind kind = kBuffer;
    int index = 0;
  };
  struct RowOp {
    HeldOp launch;                              // its buffers are unused
    c10::SmallVector<RowOperand, 6> operands;   // inputs, then outputs
  };
  // A row op's operand that is neither a region buffer nor a value: a tensor
  // the fused kernel only loads (a norm's weight), or one a row op wrote.
  struct RowTensor {
    char* data = nullptr;
    ir::DType dtype = ir::DType::kFloat32;
    int64_t strides[ir::kMaxRank] = {};  // elements, over the reduction's kernel dims
    uintptr_t begin = 0, end = 0;        // bytes it spans
    int storage = 0;                     // index into HeldRegion::storages
    bool written = false;
  };
  std::vector<RowOp> row_ops;
  std::vector<RowTensor> row_tensors;
  int row_scalars = 0;
};

struct Buffer {
  char* data = nullptr;
  ir::DType dtype = ir::DType::kFloat32;
  int64_t strides[ir::kMaxRank] = {};  // elements, over the region's dims
  uintptr_t begin = 0, end = 0;        // bytes it spans
  int storage = 0;                     // index into HeldRegion::storages
  bool external = false;               // read before the region wrote it: a kernel input
  bool written = false;
};

class HeldRegion {
 public:
  static constexpr size_t kMaxOps = 32;

  bool empty() const { return ops_.empty(); }
  size_t size() const { return ops_.size(); }
  const std::vector<HeldOp>& ops() const { return ops_; }
  const std::vector<Buffer>& buffers() const { return buffers_; }
  // The index space every op iterates over, and the scalar slots taken.
  int rank() const { return rank_; }
  const int64_t* sizes() const { return sizes_; }
  int scalar_count() const { return scalars_; }

  // Adds the launch of `op` over `iter` (its operands and storages) with
  // `args` and `shape` as launch_pointwise made them. Returns false, changing
  // nothing, when the op may not join (see the top); an empty region takes
  // any fusable op. Behind a held reduction of one output, an op joins as
  // its epilogue when it reads only that output and earlier epilogue
  // results, and every operand has the output's strides over the op's
  // index space and as many positions (so position p is the same output
  // element for all of them): the `+ eps` and `rsqrt` of an RMSNorm.
  // Behind an inner reduction (and its epilogue), an op joins as a row op
  // when its positions are the reduction's input positions (one of its
  // operands is a region buffer or row tensor, stepping along each kernel
  // dim as that does), every operand it reads is a region buffer, a value
  // broadcast along the row, a row tensor, or memory nothing in the region
  // writes, and what it writes overlaps nothing the region touches (or is a
  // row tensor it rewrites in place).
  // `full` (if given) is set when the op was refused only for the region's
  // limits (ops, operands, scalars).
  bool try_add(const char* op_name, std::shared_ptr<const OpKernel> op, KernelEntry entry,
               const LaunchArgs& args, const compiled::LaunchShape& shape, int rank,
               const at::TensorIteratorBase& iter, bool* full = nullptr);

  // For a full region of pointwise ops: finds the first op from which on no
  // op reads a value an earlier op of the region wrote (the next call of a
  // chain, the next parameter's update), and moves those ops into a region
  // of their own, returned; this one keeps the earlier ops. Both are as if
  // built from their ops alone. Returns an empty region, changing nothing,
  // when there is no such op. So a loop of independent chains is cut
  // between its chains, where the limits would cut one in two (storing the
  // value handed over) at a place drifting from call to call (each place a
  // new region key).
  HeldRegion split_independent_tail();

  // Whether no op writes a buffer the region reads before writing it.
  bool writes_no_input() const;

  // Whether a tensor outside the region still holds buffer `index`'s storage.
  bool storage_alive(int index) const;

  // The buffers the fused kernel stores: written, and alive.
  std::vector<bool> stored_buffers() const;

  // The fused kernel's cache key: the rank, each op's signature and the
  // buffer of each of its operands (the wiring), and which buffers are
  // stored. Not sizes, strides or scalar values: one key serves every shape.
  std::string key(const std::vector<bool>& stored) const;

  // The fused kernel: external buffers loaded, each op's nodes in order,
  // values handed from op to op through their buffers, `stored` buffers
  // stored once with their last value.
  ir::Kernel fused_kernel(const std::vector<bool>& stored) const;

  // The fused kernel's launch: external buffers, then stored ones, and every
  // op's scalars in order.
  LaunchArgs fused_args(const std::vector<bool>& stored, compiled::LaunchShape& shape) const;

  // Bytes the fused kernel does not store (written buffers nobody holds).
  size_t bytes_not_stored(const std::vector<bool>& stored) const;

  // Holds the launch of reduction kernel `op` (laid out as `args`, with
  // `input_count` inputs then outputs, all in `operands`) behind the ops.
  // Returns false, changing nothing, unless some input reads a buffer the
  // ops wrote through a map of index spaces (see HeldReduction), no output
  // overlaps the region's memory, and the fused kernel stays within the
  // launch limits. The region takes no op after it.
  bool try_add_reduction(const char* op_name, std::shared_ptr<const OpKernel> op, KernelEntry entry,
                         const LaunchArgs& args, const compiled::LaunchShape& shape, int rank, int input_count,
                         c10::ArrayRef<at::Tensor> operands);
  const std::optional<HeldReduction>& reduction() const { return reduction_; }

  // The fused reduction's key, kernel and launch (the ops as its prologue),
  // for a region whose ops' results are all dead (stored_buffers() all false).
  // Which epilogue values the fused kernel stores: those a tensor outside
  // holds (the output itself when nothing is).
  std::vector<bool> stored_values() const;
  std::string reduction_key(const std::vector<bool>& stored_values) const;
  ir::Kernel fused_reduction_kernel(const std::vector<bool>& stored_values) const;
  LaunchArgs fused_reduction_args(const std::vector<bool>& stored_values, compiled::LaunchShape& shape) const;

  // A region whose reduction took row ops runs as one row kernel, which
  // stores what a tensor outside holds: written region buffers, values and
  // row tensors (the reduction's output when nothing is).
  struct RowStores {
    std::vector<bool> buffers, values, tensors;
  };
  RowStores row_stores() const;
  std::string row_key(const RowStores& stores) const;
  ir::Kernel fused_row_kernel(const RowStores& stores) const;
  LaunchArgs fused_row_args(const RowStores& stores, compiled::LaunchShape& shape) const;
  // Bytes the row kernel does not store (row ops' results nobody holds).
  size_t row_bytes_not_stored(const RowStores& stores) const;

  // Empties the region, handing over its storage holds.
  std::vector<c10::Storage> release();

 private:
  // Appends the nodes of every op to `builder`, each buffer's loads reading
  // `input_of[buffer]`; returns each buffer's last written value.
  std::vector<ir::ValueId> replay_ops(ir::Builder& builder, const std::vector<int>& input_of) const;
  // try_add once the region's dims are the op's or finer (the op's strides
  // split onto them).
  // try_add for a pointwise op of `operands` kernel operands whose storages
  // `storage_of` gives.
  bool try_add_launch(const char* op_name, std::shared_ptr<const OpKernel> op, KernelEntry entry,
                      const LaunchArgs& args, const compiled::LaunchShape& shape, int rank, size_t operands,
                      OperandStorage storage_of, bool* full);
  bool try_add_over_region_dims(const char* op_name, std::shared_ptr<const OpKernel> op, KernelEntry entry,
                                const LaunchArgs& args, const compiled::LaunchShape& shape, int rank,
                                size_t operands, OperandStorage storage_of, bool* full);
  bool try_add_epilogue(const char* op_name, std::shared_ptr<const OpKernel> op, KernelEntry entry,
                        const LaunchArgs& args, const compiled::LaunchShape& shape,
                        const at::TensorIteratorBase& iter);
  bool try_add_row_op(const char* op_name, std::shared_ptr<const OpKernel> op, KernelEntry entry,
                      const LaunchArgs& args, const compiled::LaunchShape& shape, const at::TensorIteratorBase& iter);
  // The epilogue's nodes after the reduction's (`reduction_ids`, its nodes
  // as copied): each value's last value, as handed from op to op.
  std::vector<ir::ValueId> epilogue_values(ir::Builder& builder, const std::vector<ir::ValueId>& reduction_ids) const;
  // The reduction's nodes (copy_kernel_nodes), its loads of the ops' results
  // replaced by `written`, the values the ops computed.
  // The fused reduction's inputs (external region buffers, the reduction's
  // own inputs) and scalars (the ops', the reduction's, the epilogue's), in
  // `builder` and in a launch's `args` (returning the operands filled).
  void add_reduction_operands(ir::Builder& builder, std::vector<int>& input_of, std::vector<int>& own_input) const;
  int reduction_operand_args(LaunchArgs& args, compiled::LaunchShape& shape) const;
  // Operand `operand` (then the next) of a launch: the reduction's own
  // operand `index`, or value `value` laid out as the reduction's output.
  void add_own_operand(LaunchArgs& args, int index, int& operand) const;
  void add_value_operand(LaunchArgs& args, int value, int& operand) const;
  std::vector<ir::ValueId> reduction_nodes(ir::Builder& builder, const std::vector<ir::ValueId>& written,
                                           const std::vector<int>& own_input) const;
  // A region buffer's strides over the held reduction's kernel dims, and
  // its element at the reduction's first position.
  void reduction_strides(const Buffer& buffer, int64_t* strides) const;
  char* reduction_data(const Buffer& buffer) const;
  // The region's scalars, in order, into `args` from slot 0.
  void copy_scalars(LaunchArgs& args) const;

  // The index of `storage` in storages_ followed by `new_storages`, where it
  // is added if in neither.
  int storage_index(const c10::Storage& storage, std::vector<c10::Storage>& new_storages) const;
  int find_or_add_buffer(char* data, ir::DType dtype, const int64_t* strides, const c10::Storage& storage,
                         bool writes, std::vector<Buffer>& added, std::vector<c10::Storage>& new_storages,
                         bool& conflict) const;

  int rank_ = 0;
  int64_t sizes_[ir::kMaxRank] = {};
  int scalars_ = 0;
  std::vector<HeldOp> ops_;
  std::vector<Buffer> buffers_;
  std::vector<c10::Storage> storages_;
  std::optional<HeldReduction> reduction_;
};

// The iterator's tensor behind each operand of a pointwise launch's kernel:
// its inputs but CPU scalars (launch scalars), then its outputs
// (launch_pointwise's order).
c10::SmallVector<int, 8> operand_tensors(const at::TensorIteratorBase& iter);

// Appends `kernel`'s nodes to `builder`: each load of input i becomes
// `load(i)`, scalar slot s becomes `first_scalar + s`, every other node is
// copied with its arguments renamed. Returns each node's new value; fused
// kernels replay their ops' kernels through it.
std::vector<ir::ValueId> copy_kernel_nodes(ir::Builder& builder, const ir::Kernel& kernel,
                                           c10::function_ref<ir::ValueId(int input)> load, int first_scalar);

// The bytes [begin, end) an operand of `dtype` at `data` with `strides`
// touches over `sizes` (`rank` dims).
void byte_span(const char* data, ir::DType dtype, const int64_t* strides, const int64_t* sizes, int rank,
               uintptr_t& begin, uintptr_t& end);
bool overlaps(const Buffer& buffer, uintptr_t begin, uintptr_t end);

// The common refinement of two index spaces (`rank` dims of `sizes`, dim 0
// innermost, and `other_rank` of `other_sizes`) of as many positions: the
// dims of both split wherever either has a dim boundary (an inner block of
// positions), if each such boundary splits the other's dim into whole
// parts: [6240] and [130, 48] give [130, 48], [6] and [4, ...] none. A
// position then names the same coordinates in all three, so an operand's
// strides over either space become strides over the refinement
// (split_strides). Dims of one element are dropped (one position gives the
// one dim [1]); false when there is no refinement or it has more than
// ir::kMaxRank dims.
bool refine_index_spaces(const int64_t* sizes, int rank, const int64_t* other_sizes, int other_rank,
                         int64_t* refined, int& refined_rank);
// `strides` over `sizes` (`rank` dims) as strides over their refinement
// `refined`: dim d split into parts of sizes a, b, ... gets strides s, s * a, ...
void split_strides(const int64_t* sizes, int rank, const int64_t* strides, const int64_t* refined, int refined_rank,
                   int64_t* split);

// The layout class of an operand of reduction kernel `kernel` laid out as
// `args` with `strides`: along its vectorised dim (the first reduced one for
// a row reduction, dim 0 for a column one).
ir::Layout reduction_layout(const ir::Kernel& kernel, const LaunchArgs& args, const int64_t* strides);

// Whether `op`'s code calls libm functions whose bits depend on the loop
// around the element: the special functions (erfinv, digamma, the Bessel
// functions, ...), whose C helpers call libm as declared `simd`, so that a
// vectorised loop takes libmvec's variant and a scalar one libm's. The common
// functions (exp, log, tanh, erf, pow, ...) are routed through one
// implementation per element (compiler/codegen/vector_math.h) and fuse.
bool calls_libm_by_position(ir::OpCode op);

// Whether `kernel` may be fused: a pointwise kernel of loads, launch scalars,
// constants, arithmetic and routed math (the same bits vectorised or not),
// storing each output once at the position.
bool is_fusable(const ir::Kernel& kernel);
// The same for a reduction kernel (its element and epilogue nodes).
bool is_fusable_reduction(const ir::Kernel& kernel);

}  // namespace kiln::torch_integration::adaptive
