/*
 * The wire types of vmstate fields.  Integers are big-endian at their
 * natural width; "equal" types refuse a value that differs from the
 * local one, which is how a stream for another configuration is caught.
 */
#include "migration/vmstate.h"
#include "qemu/option.h"

#include <string.h>

static bool get_bool(QEMUFile *f, void *pv, size_t size, GError **errp)
{
    (void)size, (void)errp;
    *(bool *)pv = qemu_get_byte(f) != 0;
    return true;
}

static void put_bool(QEMUFile *f, const void *pv, size_t size)
{
    (void)size;
    qemu_put_byte(f, *(const bool *)pv);
}

const VMStateInfo vmstate_info_bool = { "bool", put_bool, get_bool };

/* Host integers of @size bytes, read and written as unsigned. */
static uint64_t load_host(const void *pv, size_t size)
{
    switch (size) {
    case 1: return *(const uint8_t *)pv;
    case 2: return *(const uint16_t *)pv;
    case 4: return *(const uint32_t *)pv;
    default: return *(const uint64_t *)pv;
    }
}

static void store_host(void *pv, size_t size, uint64_t v)
{
    switch (size) {
    case 1: *(uint8_t *)pv = v; break;
    case 2: *(uint16_t *)pv = v; break;
    case 4: *(uint32_t *)pv = v; break;
    default: *(uint64_t *)pv = v; break;
    }
}

static uint64_t get_be(QEMUFile *f, size_t size)
{
    switch (size) {
    case 1: return qemu_get_byte(f);
    case 2: return qemu_get_be16(f);
    case 4: return qemu_get_be32(f);
    default: return qemu_get_be64(f);
    }
}

static void put_int(QEMUFile *f, const void *pv, size_t size)
{
    uint64_t v = load_host(pv, size);

    switch (size) {
    case 1: qemu_put_byte(f, v); break;
    case 2: qemu_put_be16(f, v); break;
    case 4: qemu_put_be32(f, v); break;
    default: qemu_put_be64(f, v); break;
    }
}

static bool get_int(QEMUFile *f, void *pv, size_t size, GError **errp)
{
    (void)errp;
    store_host(pv, size, get_be(f, size));
    return true;
}

static bool get_equal(QEMUFile *f, void *pv, size_t size, GError **errp)
{
    uint64_t got = get_be(f, size), local = load_host(pv, size);

    if (got != local) {
        g_set_error(errp, ILLAN_ERROR, 0, "received 0x%" G_GINT64_MODIFIER
                    "x, but this machine has 0x%" G_GINT64_MODIFIER "x",
                    got, local);
        return false;
    }
    return true;
}

static bool get_int32_le(QEMUFile *f, void *pv, size_t size, GError **errp)
{
    int32_t got = (int32_t)qemu_get_be32(f), local = *(int32_t *)pv;

    (void)size;
    if (got < 0 || got > local) {
        g_set_error(errp, ILLAN_ERROR, 0, "received %d, outside 0..%d",
                    got, local);
        return false;
    }
    *(int32_t *)pv = got;
    return true;
}

const VMStateInfo vmstate_info_int8 = { "int8", put_int, get_int };
const VMStateInfo vmstate_info_uint8 = { "uint8", put_int, get_int };
const VMStateInfo vmstate_info_int16 = { "int16", put_int, get_int };
const VMStateInfo vmstate_info_uint16 = { "uint16", put_int, get_int };
const VMStateInfo vmstate_info_int32 = { "int32", put_int, get_int };
const VMStateInfo vmstate_info_uint32 = { "uint32", put_int, get_int };
const VMStateInfo vmstate_info_int64 = { "int64", put_int, get_int };
const VMStateInfo vmstate_info_uint64 = { "uint64", put_int, get_int };
const VMStateInfo vmstate_info_uint8_equal = { "uint8 equal", put_int,
                                               get_equal };
const VMStateInfo vmstate_info_uint16_equal = { "uint16 equal", put_int,
                                                get_equal };
const VMStateInfo vmstate_info_int32_equal = { "int32 equal", put_int,
                                               get_equal };
const VMStateInfo vmstate_info_uint32_equal = { "uint32 equal", put_int,
                                                get_equal };
/* QEMU names its 64-bit one "int64 equal" although it compares uint64. */
const VMStateInfo vmstate_info_uint64_equal = { "int64 equal", put_int,
                                                get_equal };
const VMStateInfo vmstate_info_int32_le = { "int32 le", put_int,
                                            get_int32_le };

/* A double as QEMU's CPU_Double_U: the upper 32 bits, then the lower. */
static void put_cpudouble(QEMUFile *f, const void *pv, size_t size)
{
    uint64_t bits;

    (void)size;
    memcpy(&bits, pv, sizeof(bits));
    qemu_put_be32(f, bits >> 32);
    qemu_put_be32(f, (uint32_t)bits);
}

static bool get_cpudouble(QEMUFile *f, void *pv, size_t size, GError **errp)
{
    uint64_t bits = (uint64_t)qemu_get_be32(f) << 32;

    (void)size, (void)errp;
    bits |= qemu_get_be32(f);
    memcpy(pv, &bits, sizeof(bits));
    return true;
}

const VMStateInfo vmstate_info_cpudouble = { "CPU_Double_U", put_cpudouble,
                                             get_cpudouble };

static void put_buffer(QEMUFile *f, const void *pv, size_t size)
{
    qemu_put_buffer(f, pv, size);
}

static bool get_buffer(QEMUFile *f, void *pv, size_t size, GError **errp)
{
    (void)errp;
    qemu_get_buffer(f, pv, size);
    return true;
}

const VMStateInfo vmstate_info_buffer = { "buffer", put_buffer, get_buffer };

static void put_unused(QEMUFile *f, const void *pv, size_t size)
{
    static const uint8_t zeros[512];

    (void)pv;
    for (size_t done = 0; done < size; done += sizeof(zeros)) {
        qemu_put_buffer(f, zeros, MIN(sizeof(zeros), size - done));
    }
}

static bool get_unused(QEMUFile *f, void *pv, size_t size, GError **errp)
{
    (void)pv, (void)errp;
    qemu_file_skip(f, size);
    return true;
}

const VMStateInfo vmstate_info_unused_buffer = { "unused_buffer", put_unused,
                                                 get_unused };
