#pragma once
/// \file workspace.ipp
/// The workspace pool's code (kernels/workspace.hpp).

#include "../workspace.hpp"

namespace xq::detail {

XQ_DECL workspace_pool& workspace_pool::instance() {
  static auto* pool = new workspace_pool;
  return *pool;
}

XQ_DECL std::shared_ptr<float[]> workspace_pool::get(std::size_t n) {
  std::unique_ptr<float[]> buffer;
  std::size_t size = n;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    std::size_t best = free_.size();
    for (std::size_t i = 0; i < free_.size(); ++i)  // the smallest that fits
      if (free_[i].size >= n && (best == free_.size() || free_[i].size < free_[best].size)) best = i;
    if (best != free_.size()) {
      buffer = std::move(free_[best].data);
      size = free_[best].size;
      free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(best));
    }
  }
  if (!buffer) buffer.reset(new float[n]);
  float* raw = buffer.release();
  return std::shared_ptr<float[]>(raw, [this, size](float* p) { put(std::unique_ptr<float[]>(p), size); });
}

XQ_DECL void workspace_pool::put(std::unique_ptr<float[]> p, std::size_t size) {
  std::lock_guard<std::mutex> lock(mutex_);
  free_.push_back({std::move(p), size});
  if (free_.size() > max_cached) {  // keep the largest ones: they serve any request
    auto smallest =
        std::min_element(free_.begin(), free_.end(), [](const entry& a, const entry& b) { return a.size < b.size; });
    free_.erase(smallest);
  }
}

}  // namespace xq::detail
