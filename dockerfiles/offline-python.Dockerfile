# edgebench Python apps (face-recognition), OFFLINE mode: no base image is pulled.
# The build context must contain rootfs/ laid out as the final filesystem:
#   rootfs/usr/local/bin/python3     the target's own python3
#   rootfs/<abs path of each lib>    every shared library `ldd` lists for it and
#                                    for the extensions below
#   rootfs/<its standard library>    at the path it has on the target
#   rootfs/<the app's site folder>   the pinned wheels, unpacked and compiled
#   rootfs/app/main.py               the app's script
# The run gives PYTHONHOME and PYTHONPATH (the same paths as natively).

FROM scratch
COPY rootfs/ /
WORKDIR /tmp
ENTRYPOINT ["/usr/local/bin/python3", "/app/main.py"]
