#include "size_map_form.hpp"

#include <cstdint>

#include "weft/util/error.hpp"
#include "weft/util/parallel_for.hpp"

namespace weft::morphology {

SizeMapForm SizeMapForm::smallest(int max_size, bool diameter) {
  SizeMapForm f;
  f.diameter = diameter;
  const std::int64_t largest = f.value(max_size);
  f.dtype = largest < 255 ? DType::u8 : largest < 65535 ? DType::u16 : DType::i32;
  return f;
}

namespace detail {

Array size_map_in_form(Array computed, const SizeMapForm& form) {
  if (computed.dtype() != DType::i32 || !computed.memory().is_host())
    throw Error("size map: expected a host i32 map, got " + std::string(dtype_name(computed.dtype())));
  Array out = Array::host(form.dtype, computed.shape());
  const std::int32_t* in = computed.data<std::int32_t>();
  const std::int64_t background = form.background();
  const auto convert = [&](auto* to) {
    using T = std::remove_pointer_t<decltype(to)>;
    parallel_for(computed.size(), [&](std::int64_t b, std::int64_t e, int) {
      for (std::int64_t i = b; i < e; ++i) to[i] = static_cast<T>(in[i] < 0 ? background : form.value(in[i]));
    }, 1 << 16);
  };
  if (form.dtype == DType::u8) convert(out.data<std::uint8_t>());
  else if (form.dtype == DType::u16) convert(out.data<std::uint16_t>());
  else if (form.dtype == DType::i32) convert(out.data<std::int32_t>());
  else throw ConfigError("size map: no form in " + std::string(dtype_name(form.dtype)) + " (u8, u16 or i32)");
  return out;
}

}  // namespace detail
}  // namespace weft::morphology
