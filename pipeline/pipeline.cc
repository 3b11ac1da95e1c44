#include "pipeline/pipeline.h"

#include <sstream>

#include "pipeline/detail/executor.h"

namespace hdl {

ErrorPolicy parse_error_policy(const std::string& name) {
  if (name == "raise") return ErrorPolicy::kRaise;
  if (name == "skip") return ErrorPolicy::kSkip;
  throw ConfigError("on_error must be \"raise\" or \"skip\", got \"" + name + "\"");
}

std::string PipelineState::to_string() const {
  std::ostringstream os;
  os << "hdl-state-v1 epoch=" << epoch << " batches=" << batches_consumed << " failures=" << failures
     << " fingerprint=" << std::hex << fingerprint;
  return os.str();
}

PipelineState PipelineState::parse(const std::string& text) {
  std::istringstream is(text);
  std::string magic;
  PipelineState s;
  is >> magic;
  bool ok = magic == "hdl-state-v1";
  auto field = [&](const char* key, auto& out, bool hex) {
    std::string tok;
    if (!ok || !(is >> tok) || tok.rfind(std::string(key) + "=", 0) != 0) return void(ok = false);
    std::istringstream v(tok.substr(std::string(key).size() + 1));
    if (hex) v >> std::hex;
    ok = static_cast<bool>(v >> out) && v.eof();
  };
  field("epoch", s.epoch, false);
  field("batches", s.batches_consumed, false);
  field("failures", s.failures, false);
  field("fingerprint", s.fingerprint, true);
  if (!ok || s.epoch < 0 || s.batches_consumed < 0)
    throw PipelineStateError("not a pipeline state: \"" + text + "\"");
  return s;
}

Pipeline::Pipeline(const PipelineSpec& spec, const PipelineOptions& options, const OpRegistry& registry)
    : impl_(std::make_unique<detail::Executor>(spec, options, registry)) {}
Pipeline::~Pipeline() = default;
Pipeline::Pipeline(Pipeline&&) noexcept = default;
Pipeline& Pipeline::operator=(Pipeline&&) noexcept = default;

std::optional<PipelineOutput> Pipeline::next() { return impl_->next(); }
bool Pipeline::wait_next(std::chrono::nanoseconds timeout) { return impl_->wait_next(timeout); }
int64_t Pipeline::epoch() const { return impl_->epoch(); }
int64_t Pipeline::batches_per_epoch() const { return impl_->batches_per_epoch(); }
void Pipeline::reset(int64_t epoch) { impl_->reset(epoch); }
void Pipeline::set_epoch_order(int64_t epoch, std::vector<int64_t> order) {
  impl_->set_epoch_order(epoch, std::move(order));
}
PipelineState Pipeline::state() const { return impl_->state(); }
void Pipeline::load_state(const PipelineState& s) { impl_->load_state(s); }
PipelineStats Pipeline::stats() const { return impl_->stats(); }
const Dataset& Pipeline::dataset() const { return impl_->dataset(); }
int64_t Pipeline::num_samples() const { return impl_->num_samples(); }
const PipelineOptions& Pipeline::options() const { return impl_->options(); }
std::vector<std::string> Pipeline::output_names() const { return impl_->output_names(); }
Pipeline::EpochRange Pipeline::epoch_batches() { return EpochRange(this); }

}  // namespace hdl
