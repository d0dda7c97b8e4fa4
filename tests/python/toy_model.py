"""A two-layer causal toy transformer with planted heads, traced with torch.jit.trace as a notebook
would: layer 0's head attends to the previous token, layer 1's to the first token (BOS). Its
softmax is in the graph, where headscan captures it."""

import torch

VOCAB = 62  # the demo's WordLevel vocabulary


class PlantedLayer(torch.nn.Module):
    def __init__(self, offset: int, d_model: int):
        super().__init__()
        self.offset = offset  # -1: previous token; 0: the first token
        self.value = torch.nn.Linear(d_model, d_model)

    def forward(self, x):
        length = x.shape[1]
        positions = torch.arange(length, device=x.device)
        query = positions.unsqueeze(1)
        key = positions.unsqueeze(0)
        if self.offset == -1:
            target = (key == (query - 1).clamp(min=0)).float()
        else:
            target = (key == 0).float()
        scores = target * 12.0
        scores = scores.masked_fill(key > query, float("-inf"))
        scores = scores.expand(x.shape[0], 1, length, length)  # [B, heads, T, T]
        attention = torch.softmax(scores, dim=-1)
        return x + torch.matmul(attention[:, 0], self.value(x))


class Toy(torch.nn.Module):
    def __init__(self, d_model: int = 16):
        super().__init__()
        torch.manual_seed(0)
        self.embedding = torch.nn.Embedding(VOCAB, d_model)
        self.layers = torch.nn.ModuleList([PlantedLayer(-1, d_model), PlantedLayer(0, d_model)])
        self.unembed = torch.nn.Linear(d_model, VOCAB)

    def forward(self, ids):
        x = self.embedding(ids)
        for layer in self.layers:
            x = layer(x)
        return self.unembed(x)


def traced_toy() -> torch.jit.ScriptModule:
    model = Toy().eval()
    with torch.no_grad():
        return torch.jit.trace(model, (torch.randint(0, VOCAB, (2, 12)),), check_trace=False)
