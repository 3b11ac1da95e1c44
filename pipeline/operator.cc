#include "pipeline/operator.h"

#include "pipeline/dataset.h"

namespace hdl {

Status Operator::run_batch(BatchIO&) const {
  return Status::unsupported("this operator has no gpu-stage implementation");
}

int64_t SourceOperator::num_samples() const { return dataset().size(); }

int64_t SourceOperator::distinct_samples() const { return dataset().size(); }

std::string SourceOperator::describe_sample(int64_t sample) const {
  return "\"" + dataset().path(file_index(sample)) + "\"";
}

void SourceOperator::prepare(FileSystem&) {}

double SampleIO::scalar_arg(std::string_view name, double fallback) const {
  const ConstTensorView* v = arg_input(name);
  if (!v) return fallback;
  switch (v->dtype) {
    case DType::kF32: return *v->typed<float>();
    case DType::kI64: return static_cast<double>(*v->typed<int64_t>());
    case DType::kI32: return *v->typed<int32_t>();
    case DType::kU8: return *v->typed<uint8_t>();
    case DType::kI16: return *v->typed<int16_t>();
    case DType::kF16: return half_to_float(*static_cast<const uint16_t*>(v->data));
    case DType::kBF16: return bfloat16_to_float(*static_cast<const uint16_t*>(v->data));
  }
  return fallback;
}

}  // namespace hdl
