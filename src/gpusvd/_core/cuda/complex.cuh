// The complex type of every gpusvd kernel, and the arithmetic they all use.
//
// A two-member struct with the size and alignment of NumPy's and CuPy's complex64 and
// complex128 (and of thrust::complex), so a kernel reads CuPy's complex arrays directly.
// It is ours rather than CUDA's cuComplex or CuPy's headers because the same files are
// compiled by NVRTC without CuPy's headers, by nvcc in CI, and by g++ for the host builds
// of the tests (tests/jacobi/host_kernel.py stubs the CUDA keywords before including a
// kernel). Each kernel file includes this header by its relative path, so all three
// compilers find it next to the file; everything else a kernel needs of complex numbers
// (widening, magnitudes, reductions) stays in that kernel, where its rounding is explained.

#pragma once

template <typename R> struct alignas(2 * sizeof(R)) Complex { R re, im; };

template <typename R> __device__ __forceinline__ Complex<R> cplx(R re, R im)
{
    Complex<R> z;
    z.re = re;
    z.im = im;
    return z;
}
template <typename R> __device__ __forceinline__ Complex<R> operator+(Complex<R> a, Complex<R> b)
{
    return cplx(a.re + b.re, a.im + b.im);
}
template <typename R> __device__ __forceinline__ Complex<R> operator-(Complex<R> a, Complex<R> b)
{
    return cplx(a.re - b.re, a.im - b.im);
}
template <typename R> __device__ __forceinline__ Complex<R> operator*(Complex<R> a, Complex<R> b)
{
    return cplx(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re);
}
template <typename R> __device__ __forceinline__ Complex<R> operator*(R a, Complex<R> b)
{
    return cplx(a * b.re, a * b.im);
}
template <typename R> __device__ __forceinline__ Complex<R> conj(Complex<R> x)
{
    return cplx(x.re, -x.im);
}
