// libFuzzer target: the image decoders (mx::image::imdecode: JPEG through TurboJPEG, PNG through
// libpng). The first byte's two low bits are the flag (0 gray, 1 and 3 color, 2 as stored: -1),
// the rest the encoded image.
//
// An image the decoder accepts must have the shape its flag asks for (1 or 3 channels as stored)
// and survive a PNG round trip bit for bit. Any other outcome than acceptance must be an mx::Error; a crash, a leak or an
// allocation beyond -rss_limit_mb is a finding.
#include <cstdint>
#include <string>
#include <string_view>

#include "context/error.hpp"
#include "ndarray/io/image.hpp"
#include "ndarray/ndarray.hpp"
#include "test/fuzz/fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const int flag = (data[0] & 3) == 2 ? -1 : data[0] & 1;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  mx::nd::NDArray image;
  try {
    image = mx::image::imdecode(bytes, flag);
  } catch (const mx::Error&) {
    return 0;
  }
  const mx::Shape& s = image.shape();
  ndg_fuzz::expect(s.ndim() == 3 && s[0] >= 1 && s[1] >= 1, "(height, width, channels)");
  const bool channels = flag == -1 ? s[2] == 1 || s[2] == 3 : s[2] == (flag == 1 ? 3 : 1);
  ndg_fuzz::expect(channels, "the channels the flag asks for");
  ndg_fuzz::expect(image.dtype() == mx::DType::uint8, "uint8 pixels");
  if (s[0] <= 65535 && s[1] <= 65535 && mx::image::has_png()) {
    const mx::nd::NDArray back = mx::image::imdecode(mx::image::imencode(image, ".png"), flag);
    ndg_fuzz::expect(back.asvector<std::uint8_t>() == image.asvector<std::uint8_t>(), "a PNG round trip keeps the pixels");
  }
  return 0;
}
