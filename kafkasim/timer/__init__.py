"""timer"""
