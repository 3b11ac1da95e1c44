// gen_operators: writes docs/operators.md from the operator schemas (the single source of truth).
//   build/bin/gen_operators > docs/operators.md
// tests: `docs_operators_up_to_date` (tests/pipeline/tools) fails when the checked-in file differs.
#include <cstdio>

#include "pipeline/registry.h"

int main() {
  std::printf("# Operator reference\n\nGenerated from the operator schemas by `pipeline/tools/gen_operators.cc`; "
              "do not edit by hand (`build/bin/gen_operators > docs/operators.md`).\n\n");
  for (const hdl::OpSchema* s : hdl::OpRegistry::builtin().all()) std::printf("%s\n", s->reference_doc().c_str());
  return 0;
}
