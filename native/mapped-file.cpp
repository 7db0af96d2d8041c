// Memory-maps a model file and hands it to JS as an external ArrayBuffer, so weights are never
// copied into the JS heap. The mapping lives until the ArrayBuffer is collected.
#include <napi.h>

#include <cerrno>
#include <cstring>
#include <string>

#if defined(_WIN32)
#error "kiln's mmap path is POSIX-only for now"
#endif
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace kiln {

namespace {

Napi::Value MapFile(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsString()) throw Napi::TypeError::New(env, "mapFile(path): path must be a string");
  const std::string path = info[0].As<Napi::String>();
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Napi::Error::New(env, "cannot open " + path + ": " + std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    throw Napi::Error::New(env, path + " is not a regular file");
  }
  const size_t size = (size_t)st.st_size;
  if (size == 0) {
    close(fd);
    return Napi::ArrayBuffer::New(env, 0);
  }
  // Private and writable: a stray JS write copies the page instead of faulting or touching the file.
  void* addr = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  close(fd);
  if (addr == MAP_FAILED) throw Napi::Error::New(env, "cannot map " + path + ": " + std::strerror(errno));
  madvise(addr, size, MADV_WILLNEED);
  auto* sizeHint = new size_t(size);
  return Napi::ArrayBuffer::New(
      env, addr, size, [](Napi::Env, void* data, size_t* len) {
        munmap(data, *len);
        delete len;
      },
      sizeHint);
}

}  // namespace

void registerMappedFileExports(Napi::Env env, Napi::Object exports) {
  exports.Set("mapFile", Napi::Function::New(env, MapFile, "mapFile"));
}

}  // namespace kiln
