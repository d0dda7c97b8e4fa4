# Only the LibTorch of the torch headscan builds for is linked, whatever else is installed
# (README, "Building against your own LibTorch"). Included after find_package(Torch).
#
# TorchConfig finds some of LibTorch's libraries with find_library (c10, kineto, and c10_cuda in a
# CUDA build), which searches the system's folders before LibTorch's own: beside Debian's
# libtorch-dev (1.13) it took Debian's libc10, and a program that loaded both aborted in c10's
# dispatcher. And ld, looking for what the libraries it links need (libtorch_python.so needs
# libtorch.so), takes the first of that name on its search path unless told where: Debian's
# /usr/lib/x86_64-linux-gnu/libtorch.so, whose 1.13 symbols do not link with torch 2.11's headers.

set(HEADSCAN_TORCH_LIB_DIR "${TORCH_INSTALL_PREFIX}/lib")
file(REAL_PATH "${HEADSCAN_TORCH_LIB_DIR}" HEADSCAN_TORCH_LIB_REAL)
# A LibTorch library by its file name: libtorch*, libc10*, libkineto*, libcaffe2*, libshm*. CUDA's
# own libraries (libcudart, libnvrtc, …) come from where CUDA is, and are not these.
set(HEADSCAN_TORCH_LIBRARY_FILE "^lib(torch|c10|kineto|caffe2|shm)[^/]*\\.(so|a)(\\.[0-9]+)*$")
set(HEADSCAN_TORCH_LIBRARY_NAME "^(torch|c10|kineto|caffe2|shm)[A-Za-z0-9_]*$")

# Each library of TORCH_LIBRARIES given by its path is LibTorch's own of that file name, or left
# out when LibTorch's folder has none (the system's would be another LibTorch's: the wheel's
# kineto is inside libtorch_cpu.so).
set(headscan_own_libraries "")
foreach(library IN LISTS TORCH_LIBRARIES)
  get_filename_component(name "${library}" NAME)
  if(TARGET "${library}" OR NOT IS_ABSOLUTE "${library}" OR NOT name MATCHES "${HEADSCAN_TORCH_LIBRARY_FILE}")
    list(APPEND headscan_own_libraries "${library}")
  elseif(EXISTS "${HEADSCAN_TORCH_LIB_DIR}/${name}")
    list(APPEND headscan_own_libraries "${HEADSCAN_TORCH_LIB_DIR}/${name}")
  else()
    message(STATUS "Not linking ${library}: LibTorch at ${TORCH_INSTALL_PREFIX} has no ${name}")
  endif()
endforeach()
set(TORCH_LIBRARIES "${headscan_own_libraries}")

# What the linked libraries need is looked for in LibTorch's folder first.
add_link_options("LINKER:-rpath-link,${HEADSCAN_TORCH_LIB_DIR}")

# Fails the configuration when the libraries given (paths, names or targets, followed through the
# targets' locations and link interfaces) include a LibTorch library that is not in LibTorch's own
# folder, or a bare name (-ltorch_cpu) the linker would look for in the system's folders. `what`
# names the list for the message.
function(headscan_require_own_torch what)
  set(pending ${ARGN})
  set(seen "")
  while(pending)
    list(POP_FRONT pending item)
    if(item IN_LIST seen OR item MATCHES "^\\$<|^-")
      continue()  # seen, a generator expression, or a linker flag
    endif()
    list(APPEND seen "${item}")
    if(TARGET "${item}")
      get_target_property(imported "${item}" IMPORTED)
      if(imported)
        get_target_property(configurations "${item}" IMPORTED_CONFIGURATIONS)
        set(suffixes "")
        foreach(configuration IN LISTS configurations)
          list(APPEND suffixes "_${configuration}")
        endforeach()
        foreach(suffix "" ${suffixes})
          get_target_property(location "${item}" "IMPORTED_LOCATION${suffix}")
          if(location)
            list(APPEND pending "${location}")
          endif()
        endforeach()
      endif()
      get_target_property(interface "${item}" INTERFACE_LINK_LIBRARIES)
      if(interface)
        list(APPEND pending ${interface})
      endif()
      continue()
    endif()
    get_filename_component(name "${item}" NAME)
    if(IS_ABSOLUTE "${item}" AND name MATCHES "${HEADSCAN_TORCH_LIBRARY_FILE}")
      get_filename_component(directory "${item}" DIRECTORY)
      file(REAL_PATH "${directory}" directory)
      if(NOT directory STREQUAL HEADSCAN_TORCH_LIB_REAL)
        message(FATAL_ERROR "${what} links ${item}, a LibTorch library that is not in ${HEADSCAN_TORCH_LIB_DIR} "
                            "(the LibTorch found at ${Torch_DIR}): headscan links only that LibTorch's own "
                            "libraries. Point CMAKE_PREFIX_PATH or Torch_DIR at one LibTorch, and clear the cache "
                            "(rm CMakeCache.txt) if an earlier configuration found another")
      endif()
    elseif(NOT IS_ABSOLUTE "${item}" AND item MATCHES "${HEADSCAN_TORCH_LIBRARY_NAME}")
      message(FATAL_ERROR "${what} links -l${item}, which the linker would look for in the system's folders: "
                          "headscan links only the libraries in ${HEADSCAN_TORCH_LIB_DIR}")
    endif()
  endwhile()
endfunction()

headscan_require_own_torch(TORCH_LIBRARIES ${TORCH_LIBRARIES})
