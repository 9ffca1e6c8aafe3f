"""peak_tensor_bytes (course_utils/helpers/live_memory.py) on tensors made from Python data and on sparse
tensors (issue 33); its counting of live tensors and views is tested in test_tiled_attention.py."""

import numpy as np
import pytest
import torch

from course_utils.helpers.live_memory import peak_tensor_bytes


def test_a_tensor_made_from_a_list_counts_its_bytes():
    data = [float(i) for i in range(1000)]
    assert peak_tensor_bytes(lambda: torch.tensor(data)) == 4000
    assert peak_tensor_bytes(lambda: torch.as_tensor(data)) == 4000
    assert peak_tensor_bytes(lambda: torch.tensor(data, dtype=torch.float64)) == 8000
    assert peak_tensor_bytes(lambda: [torch.tensor(data), torch.tensor(data)]) == 8000  # both alive


def test_sharing_memory_that_exists_counts_nothing():
    x, array = torch.randn(1000), np.zeros(1000, dtype=np.float32)
    assert peak_tensor_bytes(lambda: torch.as_tensor(x)) == 0  # the very tensor
    assert peak_tensor_bytes(lambda: torch.from_numpy(array)) == 0  # the array's memory, made before the call


@pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta")
def test_a_sparse_tensor_counts_its_indices_and_values():
    dense = torch.zeros(100, 100)
    dense[torch.arange(10), torch.arange(10)] = 1.0
    sparse = dense.to_sparse()  # 10 values (40 bytes), indices (2, 10) int64 (160 bytes)
    assert peak_tensor_bytes(lambda: sparse * 2) == 200
    assert peak_tensor_bytes(lambda: dense.to_sparse()) >= 200
    assert peak_tensor_bytes(lambda: sparse.to_dense()) == 40000
    csr = dense.to_sparse_csr()  # crow (101,) + col (10,) int64, values (10,) float32
    assert peak_tensor_bytes(lambda: csr * 2) == 101 * 8 + 10 * 8 + 40


def test_a_copy_of_a_numpy_array_counts_and_a_view_of_it_does_not():
    array = np.zeros(1000, dtype=np.float32)
    assert peak_tensor_bytes(lambda: torch.as_tensor(array)) == 0
    assert peak_tensor_bytes(lambda: torch.tensor(array)) == 4000
