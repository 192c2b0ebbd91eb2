// The C text of one IR node's value in a generated kernel: loads (with the
// half types' and bool's conversions), scalars, constants, positions, and
// every arithmetic, math and special function. The loop structure around the
// values is c_source.cc's.
#pragma once

#include <string>

#include "kiln/ir/kernel.h"

namespace kiln::codegen {

// The C names of operand `operand`'s element pointer (p<k>) and of its
// stride along the vectorised dim (s<k>, declared for strided operands).
std::string pointer_name(int operand);
std::string stride_name(int operand);

// C text of an element stored as `storage`, read in its compute dtype.
std::string load_conversion(ir::DType storage, const std::string& text);
// C text of `text` (of dtype `from`) converted for a store as `storage`.
std::string store_conversion(ir::DType storage, ir::DType from, const std::string& text);

class NodeExpressions {
 public:
  explicit NodeExpressions(const ir::Kernel& kernel) : kernel_(kernel) {}

  // The element of operand `index` at `position` along the vectorised dim,
  // through pointer_name(index).
  std::string element(int index, const std::string& position) const;
  // The value of `node`. `position` is the C expression of the current
  // position along the vectorised dim; `linear` of the current position in
  // the whole iteration space. Operands are the values value(args[k]).
  std::string expression(const ir::Node& node, const std::string& position, const std::string& linear) const;
  // The special-function parts (special_prelude.h) the kernel's nodes call.
  std::string special_preludes() const;
  // The routed math functions (vector_math.h) the kernel's nodes call.
  std::string vector_math() const;

 private:
  // A special function's call: on the node's own type for typed helpers,
  // else through double, with the `single` flag where the helper takes one.
  std::string special_expression(const ir::Node& node) const;
  std::string integer_helper(const char* name, ir::DType type, const ir::Node& node) const;

  const ir::Kernel& kernel_;
};

}  // namespace kiln::codegen
